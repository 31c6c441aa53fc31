//! The real faas-cli for the OpenFaaS tests, and the two functions they
//! make with it (`faas-cli new --lang rust-fmerge`, handlers written).
//!
//! A part of `openfaas.rs` (`#[path = "support/faas.rs"] mod faas;`), beside
//! `support`.

use crate::support::{Ran, fmerge_cli, workspace_root};
use std::path::{Path, PathBuf};
use std::process::Command;

/// faas-cli from `$FAAS_CLI` or PATH; `None` (the test skipped, said why)
/// without it, unless CI requires it.
pub fn faas_cli() -> Option<PathBuf> {
    let found = std::env::var_os("FAAS_CLI")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("PATH").and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join("faas-cli"))
                    .find(|p| p.is_file())
            })
        });
    let missing = found.is_none().then(|| {
        "faas-cli is not installed (set FAAS_CLI, or run ci/test, which builds it from ../shared/tools/faas-cli)".to_string()
    });
    fmerge_testkit::dataplane::tool_present(missing);
    found
}

/// Runs faas-cli in `dir`; it cannot reach the network (a dead loopback proxy).
pub fn faas(cli: &Path, dir: &Path, args: &[&str]) -> String {
    let out = Command::new(cli)
        .current_dir(dir)
        .args(args)
        .envs([
            ("HTTP_PROXY", "http://127.0.0.1:9"),
            ("HTTPS_PROXY", "http://127.0.0.1:9"),
            ("NO_PROXY", "127.0.0.1,localhost"),
        ])
        .envs([
            ("http_proxy", "http://127.0.0.1:9"),
            ("https_proxy", "http://127.0.0.1:9"),
        ])
        .output()
        .expect("run faas-cli");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "faas-cli {args:?} failed:\n{text}");
    text
}

pub const FRONT: &str = r#"use fmerge_runtime::{self as rt, Bytes, Error};

async fn handle(body: Bytes) -> rt::Reply {
    let reply = rt::invoke("of-back", body).await?;
    let client = redis::Client::open(rt::config!("REDIS_URL", "redis://127.0.0.1:6379/")).map_err(|e| Error::new(e.to_string()))?;
    let mut conn = client.get_multiplexed_async_connection().await.map_err(|e| Error::new(e.to_string()))?;
    let _: () = redis::cmd("RPUSH").arg("front:seen").arg(&reply[..]).query_async(&mut conn).await.map_err(|e| Error::new(e.to_string()))?;
    Ok(format!("front got {}", String::from_utf8_lossy(&reply)).into_bytes())
}

rt::function!(handle);
"#;

pub const BACK: &str = r#"use fmerge_runtime::{self as rt, Bytes, Error};

async fn handle(body: Bytes) -> rt::Reply {
    let client = redis::Client::open(rt::config!("REDIS_URL", "redis://127.0.0.1:6379/")).map_err(|e| Error::new(e.to_string()))?;
    let mut conn = client.get_multiplexed_async_connection().await.map_err(|e| Error::new(e.to_string()))?;
    let n: i64 = redis::cmd("INCR").arg("back:calls").query_async(&mut conn).await.map_err(|e| Error::new(e.to_string()))?;
    Ok(format!("{}#{n}:{}", rt::config!("GREETING", "hello"), String::from_utf8_lossy(&body)).into_bytes())
}

rt::function!(handle);
"#;

/// `fmerge template` and two `faas-cli new` in `dir`, the handlers written,
/// settings and secrets added to the stack file. Returns the stack file.
#[allow(dead_code)] // openfaas.rs's; template.rs makes its own function
pub fn two_functions(cli: &Path, dir: &Path) -> PathBuf {
    let Ran { ok, stdout, stderr } = fmerge_cli(dir, &["template"]);
    assert!(ok, "{stderr}");
    assert!(
        PathBuf::from(stdout.trim()).join("template.yml").is_file(),
        "{stdout}"
    );
    faas(
        cli,
        dir,
        &["new", "--lang", "rust-fmerge", "of-front", "--quiet"],
    );
    let stack = ["stack.yaml", "stack.yml"]
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
        .expect("faas-cli new wrote a stack file");
    let name = stack.file_name().unwrap().to_str().unwrap().to_string();
    faas(
        cli,
        dir,
        &[
            "new",
            "--lang",
            "rust-fmerge",
            "of-back",
            "--append",
            &name,
            "--quiet",
        ],
    );
    for (f, code) in [("of-front", FRONT), ("of-back", BACK)] {
        std::fs::write(dir.join(f).join("src/main.rs"), code).unwrap();
        let manifest = dir.join(f).join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest).unwrap();
        let redis = "redis = { version = \"1\", default-features = false, features = [\"aio\", \"tokio-comp\"] }\n";
        std::fs::write(
            &manifest,
            text.replace(
                "serde_json = \"1\"\n",
                &format!("serde_json = \"1\"\n{redis}"),
            ),
        )
        .unwrap();
        // This repo's versions, so the build shares the compiled dependencies.
        std::fs::copy(
            workspace_root().join("Cargo.lock"),
            dir.join(f).join("Cargo.lock"),
        )
        .unwrap();
    }
    let text = std::fs::read_to_string(&stack).unwrap();
    let text = text
        .replace("    image: of-back:latest\n", "    image: of-back:latest\n    environment:\n      GREETING: ${GREETING:-hi}\n    secrets:\n      - back-token\n    limits:\n      memory: 64Mi\n")
        .replace("    image: of-front:latest\n", "    image: of-front:latest\n    secrets:\n      - front-token\n    labels:\n      team: social\n    limits:\n      memory: 128Mi\n")
        .replace("    handler: ./of-back\n", "    handler: ./of-back\n    environment_file:\n      - back-env.yml\n");
    std::fs::write(&stack, text).unwrap();
    std::fs::write(dir.join("back-env.yml"), "environment:\n  MODE: strict\n").unwrap();
    stack
}

//! `fmerge template`: installs the faas-cli template `rust-fmerge`.

use anyhow::{Context as _, Result};
use clap::Args;
use fmerge_ship::template;
use std::path::PathBuf;

#[derive(Args)]
pub struct TemplateArgs {
    /// The folder whose template/ gets it (where your stack.yml is).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
    /// New functions depend on fmerge-runtime at this path
    /// [default: the runtime of the fmerge checkout this binary was built from].
    #[arg(long, value_name = "PATH", conflicts_with = "runtime_git")]
    pub runtime_path: Option<PathBuf>,
    /// New functions depend on fmerge-runtime from this git repository (what
    /// `faas-cli build` needs: its Docker build sees only the function).
    #[arg(long, value_name = "URL")]
    pub runtime_git: Option<String>,
}

/// `fmerge template`: installs the faas-cli template.
pub fn run(args: TemplateArgs) -> Result<()> {
    use template::Runtime;
    let runtime = match (args.runtime_path, args.runtime_git) {
        (Some(path), _) => {
            let path = path
                .canonicalize()
                .with_context(|| format!("--runtime-path {}: no such folder", path.display()))?;
            anyhow::ensure!(
                path.join("Cargo.toml").is_file(),
                "--runtime-path {}: no Cargo.toml there",
                path.display()
            );
            Runtime::Path(path)
        }
        (None, Some(url)) => Runtime::Git(url),
        (None, None) => Runtime::at(&crate::assets::runtime_dir())
            .context("this fmerge was built from a checkout whose runtime has moved")?,
    };
    let installed = template::install(&args.dir, crate::assets::FAAS_TEMPLATE, &runtime)?;
    eprintln!(
        "fmerge: installed the {} template; create a function with `faas-cli new --lang {} NAME`",
        template::LANG,
        template::LANG
    );
    println!("{}", installed.display());
    Ok(())
}

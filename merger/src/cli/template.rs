//! `fmerge template`: installs the faas-cli template `rust-fmerge`, with
//! this fmerge's runtime vendored into it.

use anyhow::Result;
use clap::Args;
use fmerge_ship::template;
use std::path::PathBuf;

#[derive(Args)]
pub struct TemplateArgs {
    /// The folder whose template/ gets it (where your stack.yml is).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
    /// Replace an existing template/rust-fmerge (as `faas-cli template pull
    /// --overwrite` does); without it, an existing one is kept and fmerge
    /// stops. Functions made from the template are not touched.
    #[arg(long)]
    pub overwrite: bool,
}

/// `fmerge template`: installs the faas-cli template.
pub fn run(args: TemplateArgs) -> Result<()> {
    use crate::assets;
    let installed = template::install(
        &args.dir,
        assets::FAAS_TEMPLATE,
        assets::VENDORED,
        assets::WORKSPACE_MANIFEST,
        args.overwrite,
    )?;
    eprintln!(
        "fmerge: installed the {} template; create a function with `faas-cli new --lang {} NAME`",
        template::LANG,
        template::LANG
    );
    println!("{}", installed.display());
    Ok(())
}

//! What shipping needs, checked before the build so that a missing Engine or
//! missing push credentials cost seconds, not a whole build and merge: the
//! Docker Engine answers (the same connection, with its version negotiated,
//! that the image build makes), and for a push, the reference the image will
//! get is pushable and its registry's credentials are found as
//! `--registry-auth` says. No secret is printed: only where the credentials
//! come from.

use crate::image::{self, ImageRef, engine};
use crate::push::{Auth, auth};
use anyhow::{Result, bail};

/// Checks the Engine, and for a push the reference and the credentials.
/// `tag` is the image reference given (`--tag`); else the default one,
/// `<registry>/<name>:<content hash>`, is checked with a stand-in hash.
pub fn check(
    name: &str,
    tag: Option<&str>,
    registry: Option<&str>,
    push: Option<&Auth>,
) -> Result<()> {
    engine::block_on(engine::connect())??;
    let Some(how) = push else {
        return Ok(());
    };
    let reference = match (tag, registry.filter(|r| !r.is_empty())) {
        (Some(tag), _) => tag.to_string(),
        (None, Some(_)) => image::default_reference(name, b"", registry),
        (None, None) => bail!(
            "--push has no registry to push to: without --registry or --tag the image is Docker Hub's `library/{name}`, which only Docker may push to\n\
             fix: give --registry REGISTRY/NAMESPACE (or set FMERGE_REGISTRY), e.g. --registry 127.0.0.1:5000/team, or --tag REGISTRY/NAMESPACE/{name}:TAG"
        ),
    };
    let reference = ImageRef::parse(&reference)?;
    reference.check_pushable()?;
    auth::resolve(how, &reference)?;
    Ok(())
}

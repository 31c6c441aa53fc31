//! The `format!` template of rustc 1.95 (`core::fmt::Arguments::new`): a
//! byte string of parts ending in `0x00`. A literal part is `0x01..=0x7F`
//! (its length) or `0x80` plus a little-endian `u16`, then its text; `0xC0`
//! is a plain `{}`. Other bytes start placeholders with format specs, whose
//! layout fmerge does not read: text after the first of them is left alone,
//! and a FROM found there is refused.
//!
//! `endpoints` rewrites the address in such a template; `gateway_urls`
//! reads one as text.

/// The template as people write it: its text parts, with `{}` for each
/// placeholder (`{…}` for the rest after a placeholder with specs). `None`
/// when `bytes` is not laid out as a template.
pub fn render(bytes: &[u8]) -> Option<String> {
    let mut out = String::new();
    let mut i = 0;
    while i < bytes.len() {
        let text = match bytes[i] {
            0x00 if i + 1 == bytes.len() => return Some(out),
            n @ 0x01..=0x7f => i + 1..i + 1 + n as usize,
            0x80 if i + 3 <= bytes.len() => {
                let n = u16::from_le_bytes([bytes[i + 1], bytes[i + 2]]) as usize;
                i + 3..i + 3 + n
            }
            0xc0 => {
                out.push_str("{}");
                i += 1;
                continue;
            }
            // Specs fmerge does not read: the rest only if it ends as a template does.
            _ if i > 0 && bytes.last() == Some(&0) => return Some(out + "{…}"),
            _ => return None,
        };
        i = text.end;
        out.push_str(std::str::from_utf8(bytes.get(text)?).ok()?);
    }
    None
}

/// The template with FROM replaced in its text parts; `Ok(None)` when no
/// text part holds FROM; `Err` when one does but cannot be rewritten.
pub fn rewrite(bytes: &[u8], from: &[u8], to: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut changed = false;
    let mut i = 0;
    while i < bytes.len() {
        let (text, next) = match bytes[i] {
            0x00 if i + 1 == bytes.len() => {
                out.push(0);
                return Ok(changed.then_some(out));
            }
            n @ 0x01..=0x7f => (i + 1..i + 1 + n as usize, i + 1 + n as usize),
            0x80 if i + 3 <= bytes.len() => {
                let n = u16::from_le_bytes([bytes[i + 1], bytes[i + 2]]) as usize;
                (i + 3..i + 3 + n, i + 3 + n)
            }
            0xc0 => {
                out.push(0xc0);
                i += 1;
                continue;
            }
            _ => {
                let rest = &bytes[i..];
                if super::endpoints::positions(rest, from).is_empty() {
                    out.extend_from_slice(rest);
                    return Ok(changed.then_some(out));
                }
                return Err("the address follows a placeholder with format specs (`{:?}`, `{:5}`…) in a `format!` template, whose layout fmerge does not read".into());
            }
        };
        let Some(text) = bytes.get(text) else {
            return Err("its `format!` template is not laid out as rustc 1.95 writes it".into());
        };
        let new = super::endpoints::replace(text, from, to);
        changed |= new != text;
        match new.len() {
            n @ 1..=0x7f => out.push(n as u8),
            n @ 0x80..=0xffff => out.extend([0x80, n as u8, (n >> 8) as u8]),
            _ => {
                return Err(
                    "the rewritten `format!` piece would be empty or longer than 65535 bytes"
                        .into(),
                );
            }
        }
        out.extend_from_slice(&new);
        i = next;
    }
    Err("its `format!` template does not end as rustc 1.95 writes it".into())
}

#[cfg(test)]
mod tests {
    use super::{render, rewrite};

    #[test]
    fn a_piece_is_rewritten_with_its_new_length() {
        let t = b"\x11redis://abc:6390/\xc0\x00";
        assert_eq!(
            rewrite(t, b"abc:6390", b"127.0.0.1:7").unwrap().unwrap(),
            b"\x14redis://127.0.0.1:7/\xc0\x00"
        );
        assert_eq!(rewrite(t, b"nowhere", b"x").unwrap(), None);
    }

    #[test]
    fn a_piece_that_grows_past_127_bytes_takes_the_long_form() {
        let t = b"\x03abc\xc0\x00";
        let long = vec![b'x'; 200];
        let mut want = vec![0x80, 200, 0];
        want.extend(&long);
        want.extend([0xc0, 0]);
        assert_eq!(rewrite(t, b"abc", &long).unwrap().unwrap(), want);
    }

    #[test]
    fn a_template_reads_as_written_and_plain_text_is_not_one() {
        assert_eq!(
            render(b"\xc0\x12/function/ep-store\x00").as_deref(),
            Some("{}/function/ep-store")
        );
        assert_eq!(
            render(b"\x04see \xc0\x01:\xc3 \x00\x00h\x05\x00\x00").as_deref(),
            Some("see {}:{…}")
        );
        assert_eq!(render(b"http://gateway:8080/function/ep-store"), None);
    }

    #[test]
    fn text_after_a_placeholder_with_specs_is_refused_only_if_it_matches() {
        let t = b"\xc0\x01:\xc3 \x00\x00h\x05\x00\x00";
        assert_eq!(rewrite(t, b":", b";").unwrap().unwrap()[..3], *b"\xc0\x01;");
        let t = b"\x02a:\xc3 \x00\x00h\x05\x00host\x00";
        assert!(rewrite(t, b"host", b"x").is_err());
        assert_eq!(rewrite(t, b"a:", b"b:").unwrap().unwrap()[..3], *b"\x02b:");
    }
}

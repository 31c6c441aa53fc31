//! URL short codes from a small C library (`c/shortcode.c`, built by
//! `build.rs` with the `cc` crate). `url-shorten` uses it; it exists so that
//! one function has a native static library that a merge must link.

/// Length of every short code.
pub const LEN: usize = 10;

unsafe extern "C" {
    fn shortcode_fnv1a(data: *const u8, len: usize) -> u64;
    fn shortcode_encode(data: *const u8, len: usize, out: *mut u8);
}

/// The 64-bit FNV-1a hash of `input`.
pub fn fnv1a(input: &[u8]) -> u64 {
    // SAFETY: the C function reads exactly `len` bytes of `data`.
    unsafe { shortcode_fnv1a(input.as_ptr(), input.len()) }
}

/// The [`LEN`]-character base62 short code of `input`; the same input always
/// gives the same code.
pub fn short_code(input: &str) -> String {
    let mut out = [0u8; LEN];
    // SAFETY: reads `input.len()` bytes and writes exactly `LEN` bytes to `out`.
    unsafe { shortcode_encode(input.as_ptr(), input.len(), out.as_mut_ptr()) };
    out.iter().map(|&b| b as char).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_reference_vectors() {
        assert_eq!(fnv1a(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a(b"a"), 0xaf63dc4c8601ec8c);
    }

    #[test]
    fn codes_are_stable_base62() {
        let code = short_code("https://example.com/a");
        assert_eq!(code.len(), LEN);
        assert!(code.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(code, short_code("https://example.com/a"));
        assert_ne!(code, short_code("https://example.com/b"));
    }
}

//! Compiles `c/shortcode.c` into `libshortcode.a`. `cc` prints
//! `cargo:rustc-link-lib=static=shortcode` and its search path: the native
//! dependency that fmerge must carry over to any binary that merges
//! `url-shorten`.

fn main() {
    println!("cargo:rerun-if-changed=c/shortcode.c");
    cc::Build::new()
        .file("c/shortcode.c")
        .warnings(true)
        .compile("shortcode");
}

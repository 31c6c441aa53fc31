fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let refs: Vec<&str> = a[1..].iter().map(|s| s.as_str()).collect();
    let mut o = fmerge::Options::new(&a[0], &refs);
    o.emit_ll = std::env::var("LL").is_ok();
    match fmerge::build(&o) {
        Ok(m) => println!("{}", m.binary.display()),
        Err(e) => { eprintln!("error: {e:#}"); std::process::exit(1) }
    }
}

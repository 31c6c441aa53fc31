//! Rust source as token trees: just enough of the language for
//! [`super::rounds`] to find `invoke` sites and the constructs around them,
//! without a parser crate (fmerge's own build stays small).

use anyhow::{Context as _, Result, bail};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One token, or a bracketed group of them.
#[derive(Debug, Clone, PartialEq)]
pub enum Tree {
    Ident(String),
    /// A string literal's text (escapes left as written).
    Str(String),
    /// Any other literal, or a lifetime.
    Lit,
    Punct(char),
    /// `(`, `[` or `{`, and what it holds.
    Group(char, Vec<Tree>),
}

impl Tree {
    pub fn is_ident(&self, name: &str) -> bool {
        matches!(self, Tree::Ident(n) if n == name)
    }

    pub fn is_punct(&self, c: char) -> bool {
        matches!(self, Tree::Punct(p) if *p == c)
    }

    /// The contents of a group opened by `open`.
    pub fn group(&self, open: char) -> Option<&[Tree]> {
        match self {
            Tree::Group(o, inner) if *o == open => Some(inner),
            _ => None,
        }
    }
}

/// The token trees of `text`; an error for unbalanced brackets or an
/// unclosed literal or comment.
pub fn parse(text: &str) -> Result<Vec<Tree>> {
    let chars: Vec<char> = text.chars().collect();
    let mut stack: Vec<(char, Vec<Tree>)> = vec![(' ', Vec::new())];
    let mut i = 0;
    let push = |stack: &mut Vec<(char, Vec<Tree>)>, t: Tree| {
        stack.last_mut().expect("the top level").1.push(t)
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            loop {
                match (chars.get(i), chars.get(i + 1)) {
                    (Some('/'), Some('*')) => (depth, i) = (depth + 1, i + 2),
                    (Some('*'), Some('/')) => (depth, i) = (depth - 1, i + 2),
                    (Some(_), _) => i += 1,
                    (None, _) => bail!("a comment is not closed"),
                }
                if depth == 0 {
                    break;
                }
            }
        } else if c == '"' {
            let (s, end) = string(&chars, i + 1, 0)?;
            push(&mut stack, Tree::Str(s));
            i = end;
        } else if let Some((hashes, start)) = raw_string(&chars, i) {
            let (s, end) = string(&chars, start, hashes)?;
            push(&mut stack, Tree::Str(s));
            i = end;
        } else if c == '\'' {
            // A char literal ('a', '\n', '\'') or a lifetime ('a).
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
                while i < chars.len() && is_ident_char(chars[i]) {
                    i += 1;
                }
            }
            push(&mut stack, Tree::Lit);
        } else if c.is_ascii_digit() {
            while i < chars.len()
                && (is_ident_char(chars[i])
                    || (chars[i] == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)))
            {
                i += 1;
            }
            push(&mut stack, Tree::Lit);
        } else if is_ident_char(c) {
            let start = i;
            while i < chars.len() && is_ident_char(chars[i]) {
                i += 1;
            }
            // A byte string or a byte char: b"…", b'…'.
            if chars[start..i] == ['b'] && matches!(chars.get(i), Some('"' | '\'')) {
                continue;
            }
            push(&mut stack, Tree::Ident(chars[start..i].iter().collect()));
        } else if matches!(c, '(' | '[' | '{') {
            stack.push((c, Vec::new()));
            i += 1;
        } else if matches!(c, ')' | ']' | '}') {
            let open = match c {
                ')' => '(',
                ']' => '[',
                _ => '{',
            };
            match stack.pop() {
                Some((o, inner)) if o == open && !stack.is_empty() => {
                    push(&mut stack, Tree::Group(o, inner))
                }
                _ => bail!("an unmatched `{c}`"),
            }
            i += 1;
        } else {
            push(&mut stack, Tree::Punct(c));
            i += 1;
        }
    }
    match stack.pop() {
        Some((' ', top)) if stack.is_empty() => Ok(top),
        Some((o, _)) => bail!("a `{o}` is not closed"),
        None => unreachable!("the top level is never popped"),
    }
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A raw string's start at `i` (`r"`, `r#"`, `br#"`…): its `#`s and the
/// index after its opening quote.
fn raw_string(chars: &[char], i: usize) -> Option<(usize, usize)> {
    if i > 0 && is_ident_char(chars[i - 1]) {
        return None;
    }
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = chars[j..].iter().take_while(|c| **c == '#').count();
    (chars.get(j + hashes) == Some(&'"')).then_some((hashes, j + hashes + 1))
}

/// The text of a string from `start` (after its quote) to its closing quote
/// and `hashes` `#`s; the index after them.
fn string(chars: &[char], start: usize, hashes: usize) -> Result<(String, usize)> {
    let mut i = start;
    while i < chars.len() {
        if chars[i] == '\\' && hashes == 0 {
            i += 2;
            continue;
        }
        let closing = chars
            .get(i + 1..i + 1 + hashes)
            .is_some_and(|h| h.iter().all(|c| *c == '#'));
        if chars[i] == '"' && closing {
            return Ok((chars[start..i].iter().collect(), i + 1 + hashes));
        }
        i += 1;
    }
    bail!("a string literal is not closed")
}

/// `trees` split at top-level commas (a trailing comma adds nothing).
pub fn split_commas(trees: &[Tree]) -> Vec<&[Tree]> {
    let mut parts: Vec<&[Tree]> = trees.split(|t| t.is_punct(',')).collect();
    if parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    parts
}

/// The index of the `{…}` body or the `;` that ends the item whose rest
/// starts at `from` (or the last index).
pub fn item_end(trees: &[Tree], from: usize) -> usize {
    (from..trees.len())
        .find(|&k| trees[k].group('{').is_some() || trees[k].is_punct(';'))
        .unwrap_or(trees.len().saturating_sub(1))
}

/// The first `{…}` block at or after `from` (a `for`, `while`, `if` or
/// `match` body), unless a `;` comes first.
pub fn brace_after(trees: &[Tree], from: usize) -> Option<usize> {
    let k = item_end(trees, from);
    trees.get(k)?.group('{').map(|_| k)
}

/// `#[cfg(test)] ITEM` at `i`: how many trees to skip; other attributes:
/// the attribute alone.
pub fn test_only(trees: &[Tree], i: usize) -> Option<usize> {
    if !trees[i].is_punct('#') {
        return None;
    }
    let inner = usize::from(trees.get(i + 1).is_some_and(|t| t.is_punct('!')));
    let attr = trees.get(i + 1 + inner)?.group('[')?;
    let test = matches!(attr, [cfg, Tree::Group('(', arg)]
        if cfg.is_ident("cfg") && matches!(arg.as_slice(), [t] if t.is_ident("test")));
    if test && inner == 0 {
        Some(item_end(trees, i + 2) - i + 1)
    } else {
        Some(2 + inner)
    }
}

/// The arms of a `match` body: each arm's expression.
pub fn arms(body: &[Tree]) -> Vec<&[Tree]> {
    let mut out = Vec::new();
    let mut k = 0;
    while let Some(arrow) = (k..body.len().saturating_sub(1))
        .find(|&x| body[x].is_punct('=') && body[x + 1].is_punct('>'))
    {
        let start = arrow + 2;
        let block = body.get(start).is_some_and(|t| t.group('{').is_some())
            && !body.get(start + 1).is_some_and(|t| t.is_punct('.'));
        let end = if block {
            start + 1
        } else {
            (start..body.len())
                .find(|&x| body[x].is_punct(','))
                .unwrap_or(body.len())
        };
        out.push(&body[start..end]);
        k = end;
    }
    out
}

/// Every `.rs` file under `dir`, sorted.
pub fn rust_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let entries =
            std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))?;
        for entry in entries {
            let path = entry?.path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The token trees of each source file of the crate whose package folder is
/// `dir` (its `src/`), in file order.
pub fn crate_files(dir: &Path) -> Result<Vec<Vec<Tree>>> {
    rust_files(&dir.join("src"))?
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f)
                .with_context(|| format!("cannot read {}", f.display()))?;
            parse(&text).with_context(|| format!("cannot read {} as Rust", f.display()))
        })
        .collect()
}

/// The string `const`s and `static`s of a file, by name.
pub fn collect_consts(trees: &[Tree], out: &mut HashMap<String, String>) {
    for (i, t) in trees.iter().enumerate() {
        if (t.is_ident("const") || t.is_ident("static"))
            && let Some(Tree::Ident(name)) = trees.get(i + 1)
            && let Some(end) = trees[i..].iter().position(|t| t.is_punct(';'))
            && end >= 2
            && let [Tree::Punct('='), Tree::Str(value)] = &trees[i + end - 2..i + end]
        {
            out.insert(name.clone(), value.clone());
        }
        if let Tree::Group(_, inner) = t {
            collect_consts(inner, out);
        }
    }
}

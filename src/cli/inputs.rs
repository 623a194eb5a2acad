//! Reading manifest inputs from files, directories and stdin (I/O adapter for `check` and `test`).

use std::io::Read;
use std::path::{Path, PathBuf};

pub const EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// One input: its display name and its text, or why it could not be read.
pub struct Input {
    pub name: String,
    pub text: Result<String, String>,
}

fn has_manifest_extension(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out)?;
        } else if has_manifest_extension(&p) {
            out.push(p);
        }
    }
    Ok(())
}

fn read_file(p: &Path) -> Result<String, String> {
    let bytes = std::fs::read(p).map_err(|e| format!("cannot read: {e}"))?;
    decode(bytes)
}

/// YAML text is UTF-8, or UTF-16 with a byte order mark (YAML 1.2, 5.2).
pub fn decode(bytes: Vec<u8>) -> Result<String, String> {
    let utf16 = |body: &[u8], be: bool| -> Result<String, String> {
        if !body.len().is_multiple_of(2) {
            return Err("UTF-16 text with an odd number of bytes".to_string());
        }
        let units = body.chunks_exact(2).map(|c| {
            if be {
                u16::from_be_bytes([c[0], c[1]])
            } else {
                u16::from_le_bytes([c[0], c[1]])
            }
        });
        char::decode_utf16(units)
            .collect::<Result<String, _>>()
            .map_err(|e| format!("invalid UTF-16 text: {e}"))
    };
    match bytes.as_slice() {
        [0xFE, 0xFF, rest @ ..] => utf16(rest, true),
        [0xFF, 0xFE, rest @ ..] => utf16(rest, false),
        [0xEF, 0xBB, 0xBF, rest @ ..] => String::from_utf8(rest.to_vec())
            .map_err(|e| format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to() + 3)),
        _ => String::from_utf8(bytes)
            .map_err(|e| format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to())),
    }
}

/// Expands paths (directories recursively, `.yaml`, `.yml`, `.json`; `-` is stdin) in a stable order.
pub fn collect(paths: &[String]) -> Vec<Input> {
    let mut out = Vec::new();
    for arg in paths {
        if arg == "-" {
            let mut buf = Vec::new();
            let text = std::io::stdin()
                .read_to_end(&mut buf)
                .map_err(|e| format!("cannot read stdin: {e}"))
                .and_then(|_| {
                    String::from_utf8(buf).map_err(|_| "stdin is not UTF-8 text".to_string())
                });
            out.push(Input {
                name: "<stdin>".to_string(),
                text,
            });
            continue;
        }
        let p = Path::new(arg);
        if p.is_dir() {
            let mut files = Vec::new();
            match walk(p, &mut files) {
                Ok(()) => out.extend(files.into_iter().map(|f| Input {
                    name: f.display().to_string(),
                    text: read_file(&f),
                })),
                Err(e) => out.push(Input {
                    name: arg.clone(),
                    text: Err(format!("cannot read directory: {e}")),
                }),
            }
        } else {
            out.push(Input {
                name: arg.clone(),
                text: read_file(p),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn decodes_utf8_and_utf16_with_bom() {
        assert_eq!(decode(b"a: 1".to_vec()).unwrap(), "a: 1");
        assert_eq!(decode(b"\xEF\xBB\xBFa: 1".to_vec()).unwrap(), "a: 1");
        let be: Vec<u8> = [0xFE, 0xFF]
            .into_iter()
            .chain("a: 1".encode_utf16().flat_map(u16::to_be_bytes))
            .collect();
        assert_eq!(decode(be).unwrap(), "a: 1");
        let le: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain("a: 1".encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        assert_eq!(decode(le).unwrap(), "a: 1");
        assert_eq!(
            decode(vec![b'a', 0xFF]).unwrap_err(),
            "not UTF-8 text (byte 1)"
        );
    }
}

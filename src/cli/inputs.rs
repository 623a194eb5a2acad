//! Reading manifest inputs from files, directories and stdin (I/O adapter for `check` and `test`).

use std::io::Read;
use std::path::{Path, PathBuf};

pub const EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// One input: its display name and where it is read from when its turn comes (one at a time,
/// as a stream), or why it cannot be read.
pub struct Input {
    pub name: String,
    pub source: Source,
}

pub enum Source {
    Stdin,
    File(PathBuf),
    Unreadable(String),
}

impl Input {
    /// A reader of the input's UTF-8 text. UTF-8 is streamed (its byte order mark skipped);
    /// UTF-16 with a byte order mark is read whole and decoded.
    pub fn reader(&self) -> Result<Box<dyn std::io::BufRead + '_>, String> {
        use std::io::BufRead;
        let mut r: Box<dyn BufRead> = match &self.source {
            Source::Unreadable(e) => return Err(e.clone()),
            Source::Stdin => Box::new(std::io::stdin().lock()),
            Source::File(p) => Box::new(std::io::BufReader::with_capacity(
                1 << 16,
                std::fs::File::open(p).map_err(|e| format!("cannot read: {e}"))?,
            )),
        };
        let head = r.fill_buf().map_err(|e| format!("cannot read: {e}"))?;
        match head {
            [0xFE, 0xFF, ..] | [0xFF, 0xFE, ..] => {
                let mut bytes = Vec::new();
                r.read_to_end(&mut bytes)
                    .map_err(|e| format!("cannot read: {e}"))?;
                Ok(Box::new(std::io::Cursor::new(decode(bytes)?.into_bytes())))
            }
            [0xEF, 0xBB, 0xBF, ..] => {
                r.consume(3);
                Ok(r)
            }
            _ => Ok(r),
        }
    }
}

fn has_manifest_extension(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// What a directory walk leaves out, and why.
pub struct Skipped {
    pub path: PathBuf,
    pub why: &'static str,
}

/// Whether `dir` holds a Helm chart's templates (Go templates, not YAML).
fn is_chart_templates(dir: &Path) -> bool {
    dir.file_name().is_some_and(|n| n == "templates")
        && dir.parent().is_some_and(|p| p.join("Chart.yaml").is_file())
}

/// An `--exclude` glob, read as a `.gitignore` line is: `dir/` matches directories only,
/// `**/x` matches `x` at the top too, and one that starts with `/` (or `./`) is anchored: it
/// matches the path from the top of the walk, never a name further down.
pub struct Glob {
    pattern: wildmatch::WildMatch,
    /// For `**/x`: `x`, which `**/` (a directory and a slash) does not match at the top.
    top: Option<wildmatch::WildMatch>,
    /// A pattern written from `/`: also an absolute path, matched as written.
    absolute: Option<wildmatch::WildMatch>,
    dir_only: bool,
    anchored: bool,
}

impl Glob {
    pub fn new(written: &str) -> Glob {
        let absolute = written
            .starts_with('/')
            .then(|| wildmatch::WildMatch::new(written.trim_end_matches('/')));
        let pattern = written;
        let (pattern, anchored) = match pattern
            .strip_prefix("./")
            .or_else(|| pattern.strip_prefix('/'))
        {
            Some(p) => (p, true),
            None => (pattern, false),
        };
        let (pattern, dir_only) = match pattern.strip_suffix('/') {
            Some(p) if !p.is_empty() => (p, true),
            _ => (pattern, false),
        };
        Glob {
            pattern: wildmatch::WildMatch::new(pattern),
            top: pattern.strip_prefix("**/").map(wildmatch::WildMatch::new),
            absolute,
            dir_only,
            anchored,
        }
    }

    fn matches(&self, s: &str) -> bool {
        self.pattern.matches(s) || self.top.as_ref().is_some_and(|t| t.matches(s))
    }
}

/// Whether a glob excludes `p`, found walking `root`: an anchored glob is matched against the
/// path below `root` (and, written from `/`, against the path as shown), another against the
/// path as shown without a leading `./` (so `bad/*` works for `check .` as for `check bad/..`)
/// and the file name. `is_dir` is asked only for a glob that matches directories alone, so that
/// an entry another glob excludes is never looked at (a hung mount can be left out by name).
fn excluded(p: &Path, root: &Path, is_dir: impl FnOnce() -> bool, excludes: &[Glob]) -> bool {
    let shown = p.display().to_string();
    let shown = shown.strip_prefix("./").unwrap_or(&shown);
    let below = p
        .strip_prefix(root)
        .map(|b| b.display().to_string())
        .unwrap_or_default();
    let name = p.file_name().map(|n| n.to_string_lossy().to_string());
    let hit = |g: &&Glob| {
        if g.anchored {
            g.matches(&below) || g.absolute.as_ref().is_some_and(|a| a.matches(shown))
        } else {
            g.matches(shown) || name.as_deref().is_some_and(|n| g.matches(n))
        }
    };
    let mut hits = excludes.iter().filter(hit);
    hits.clone().any(|g| !g.dir_only) || hits.next().is_some() && is_dir()
}

/// Adds the manifests below `dir` to `out`; a directory that cannot be read (at any depth) is
/// added as an unreadable input, and the walk goes on with the rest. `above` holds the
/// resolved paths of the directories being walked, `dir`'s included: links are followed, and
/// one that leads back to any of them is a loop, skipped (ripgrep and walkdir stop loops at
/// the same place, comparing device and inode).
fn walk(
    dir: &Path,
    root: &Path,
    excludes: &[Glob],
    above: &mut Vec<PathBuf>,
    out: &mut Vec<Input>,
    skipped: &mut Vec<Skipped>,
) {
    let unreadable = |e: std::io::Error| Input {
        name: dir.display().to_string(),
        source: Source::Unreadable(format!("cannot read directory: {e}")),
    };
    let mut entries = Vec::new();
    match std::fs::read_dir(dir) {
        Ok(read) => {
            for e in read {
                match e {
                    Ok(e) => entries.push(e.path()),
                    Err(e) => {
                        out.push(unreadable(e));
                        break;
                    }
                }
            }
        }
        Err(e) => {
            out.push(unreadable(e));
            return;
        }
    }
    entries.sort();
    for p in entries {
        let hidden = p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if excluded(&p, root, || p.is_dir(), excludes) {
            continue;
        }
        // One look at each entry (following links); one that cannot be looked at is kept, to
        // be reported unreadable.
        let meta = std::fs::metadata(&p);
        if meta.as_ref().is_ok_and(|m| m.is_dir()) {
            if hidden {
                skipped.push(Skipped {
                    path: p,
                    why: "hidden directory",
                });
            } else if is_chart_templates(&p) {
                skipped.push(Skipped {
                    path: p,
                    why: "Helm chart templates are Go templates, not YAML: check `helm template` output instead",
                });
            } else {
                match std::fs::canonicalize(&p) {
                    Ok(real) if above.contains(&real) => skipped.push(Skipped {
                        path: p,
                        why: "a link back to a directory above it: a file system loop",
                    }),
                    real => {
                        // One that cannot be resolved is walked, to be reported unreadable.
                        let pushed = real.map(|r| above.push(r)).is_ok();
                        walk(&p, root, excludes, above, out, skipped);
                        if pushed {
                            above.pop();
                        }
                    }
                }
            }
        } else if has_manifest_extension(&p) && !hidden {
            // A FIFO, socket or device named like a manifest would block the walk or never end.
            match meta {
                Ok(m) if !m.is_file() => skipped.push(Skipped {
                    path: p,
                    why: "not a regular file",
                }),
                _ => out.push(Input {
                    name: p.display().to_string(),
                    source: Source::File(p),
                }),
            }
        }
    }
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

/// The inputs of a run.
#[derive(Default)]
pub struct Collected {
    pub inputs: Vec<Input>,
    /// Directories a walk left out.
    pub skipped: Vec<Skipped>,
    /// Arguments that name nothing: a usage error.
    pub missing: Vec<String>,
}

/// Expands paths (directories recursively, `.yaml`, `.yml`, `.json`, leaving out hidden
/// directories, Helm chart templates and `excludes`; `-` is stdin) in a stable order.
pub fn collect(paths: &[String], excludes: &[String]) -> Collected {
    let excludes: Vec<Glob> = excludes.iter().map(|g| Glob::new(g)).collect();
    let mut c = Collected::default();
    for arg in paths {
        if arg == "-" {
            c.inputs.push(Input {
                name: "<stdin>".to_string(),
                source: Source::Stdin,
            });
            continue;
        }
        let p = Path::new(arg);
        if p.is_dir() {
            let mut above: Vec<PathBuf> = std::fs::canonicalize(p).into_iter().collect();
            walk(p, p, &excludes, &mut above, &mut c.inputs, &mut c.skipped);
        } else if p.exists() {
            c.inputs.push(Input {
                name: arg.clone(),
                source: Source::File(p.to_path_buf()),
            });
        } else {
            c.missing.push(arg.clone());
        }
    }
    c
}

/// `check`'s WorkloadSpread target index on disk: an unnamed temporary file (gone when the
/// process ends). Records a write fails for are kept in memory instead, so a full disk costs
/// memory, never a verdict.
pub struct FileSpill {
    file: Option<std::fs::File>,
    len: u64,
    /// Set by a failed write: what follows goes to memory.
    full: bool,
    memory: Vec<u8>,
}

/// Places at or above this are in memory.
const IN_MEMORY: u64 = 1 << 62;

impl FileSpill {
    pub fn new() -> FileSpill {
        FileSpill {
            file: tempfile::tempfile().ok(),
            len: 0,
            full: false,
            memory: Vec::new(),
        }
    }
}

impl Default for FileSpill {
    fn default() -> FileSpill {
        FileSpill::new()
    }
}

impl crate::ci::check::Spill for FileSpill {
    fn put(&mut self, record: &[u8]) -> u64 {
        use std::os::unix::fs::FileExt;
        if let Some(f) = self.file.as_ref().filter(|_| !self.full) {
            // Positioned writes: a failed one leaves nothing that is read back.
            if f.write_all_at(record, self.len).is_ok() {
                self.len += record.len() as u64;
                return self.len - record.len() as u64;
            }
            self.full = true;
        }
        IN_MEMORY + self.memory.put(record)
    }

    fn get(&mut self, at: u64, len: u32) -> Result<Vec<u8>, String> {
        use std::os::unix::fs::FileExt;
        if at >= IN_MEMORY {
            return self.memory.get(at - IN_MEMORY, len);
        }
        let f = self
            .file
            .as_ref()
            .ok_or("the temporary file is not available")?;
        let mut buf = vec![0; len as usize];
        f.read_exact_at(&mut buf, at).map_err(|e| e.to_string())?;
        Ok(buf)
    }
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

#[cfg(test)]
mod spill_tests {
    use super::*;
    use crate::ci::check::Spill;

    /// Records come back as written, from the file and, once a write has failed, from memory.
    #[test]
    fn records_round_trip() {
        let mut s = FileSpill::new();
        assert!(s.file.is_some());
        let a = s.put(b"first");
        let b = s.put(b"second record");
        s.full = true;
        let c = s.put(b"kept in memory");
        assert!(c >= IN_MEMORY && a < IN_MEMORY && b < IN_MEMORY);
        assert_eq!(s.get(b, 13).unwrap(), b"second record");
        assert_eq!(s.get(a, 5).unwrap(), b"first");
        assert_eq!(s.get(c, 14).unwrap(), b"kept in memory");
        assert!(s.get(c, 15).is_err());
    }
}

//! The cost file: what each scenario file cost on earlier runs, the ETA's prior for the next.
//!
//! `eta-costs.tsv` in the cache directory (`$WAKESIM_CACHE_DIR`, else `$XDG_CACHE_HOME/wakesim`,
//! else `~/.cache/wakesim`), tab-separated: a header naming the format and wakesim's version,
//! then a line per scenario file, `PATH HASH KIND SEEDS SECS FIXED PER_SEED` (the file's path as
//! the run named it, the FNV-1a hash of its content, the seeds it ran, the seconds they took and
//! those seconds split into a fixed part and a part per seed). A file whose content changed has
//! another hash, and its line is not used (its neighbours' costs are, through
//! [`eta::calibrate`](super::eta::calibrate)); a cost file of another wakesim version, or one
//! that does not parse, is ignored as a whole, never an error: the ETA is a guide, not the report.
//!
//! Written at the end of a run (a run stopped by Ctrl-C or a time budget included), with the
//! lines of the files the run did not measure kept: to a temporary file beside it, then renamed
//! over it, so a reader never sees half a file and two runs ending together leave one whole.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::eta::{Measured, Prior};

/// The file's name in the cache directory.
pub const FILE: &str = "eta-costs.tsv";

/// The header's first fields: the format's name and version.
const FORMAT: &str = "wakesim-eta-costs\t1";

/// The header line: the format and the version of wakesim that measured.
fn header() -> String {
    format!("{FORMAT}\t{}", env!("CARGO_PKG_VERSION"))
}

/// The cost file's place: in the cache directory, if there is one.
pub fn path() -> Option<PathBuf> {
    crate::remote::home::cache_dir().ok().map(|d| d.join(FILE))
}

/// One scenario file's remembered cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub hash: String,
    pub kind: String,
    pub cost: Measured,
}

/// The cost file's lines by scenario path.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CostsFile {
    pub entries: BTreeMap<String, Entry>,
}

impl CostsFile {
    /// The file at `path`; empty if it is missing, of another version, or not whole.
    pub fn read(path: &Path) -> CostsFile {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| CostsFile::parse(&text))
            .unwrap_or_default()
    }

    /// A cost file's text, or `None` if it is of another format or version or any line does not
    /// parse (a file cut short or written by hand is ignored, not half used).
    pub fn parse(text: &str) -> Option<CostsFile> {
        let mut lines = text.lines();
        if lines.next()? != header() {
            return None;
        }
        let mut entries = BTreeMap::new();
        for line in lines {
            let f: Vec<&str> = line.split('\t').collect();
            let [path, hash, kind, seeds, secs, fixed, per_seed] = f[..] else {
                return None;
            };
            let num = |v: &str| v.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0);
            let cost = Measured {
                seeds: seeds.parse().ok()?,
                secs: num(secs)?,
                fixed: num(fixed)?,
                per_seed: num(per_seed)?,
            };
            if path.is_empty() || hash.is_empty() || cost.seeds == 0 {
                return None;
            }
            let (hash, kind) = (hash.to_string(), kind.to_string());
            entries.insert(path.to_string(), Entry { hash, kind, cost });
        }
        Some(CostsFile { entries })
    }

    /// The text of the file: the header, then a line per path in order.
    pub fn render(&self) -> String {
        let mut out = header() + "\n";
        for (path, e) in &self.entries {
            let c = e.cost;
            out += &format!(
                "{path}\t{}\t{}\t{}\t{:.6}\t{:.6}\t{:.9}\n",
                e.hash, e.kind, c.seeds, c.secs, c.fixed, c.per_seed
            );
        }
        out
    }

    /// The remembered cost of the file at `path` whose content hashes to `hash`, as a prior;
    /// `None` if it was not measured or has changed since.
    pub fn prior(&self, path: &str, hash: &str) -> Option<Prior> {
        let e = self.entries.get(path).filter(|e| e.hash == hash)?;
        Some(Prior {
            fixed: e.cost.fixed,
            per_seed: e.cost.per_seed,
            remembered: true,
        })
    }

    /// Write the file at `path` with `measured` (path, entry) merged over what is there now
    /// (read again, so another run's lines written since are kept): to a temporary file in the
    /// same directory, then renamed over it.
    pub fn update(
        path: &Path,
        measured: impl IntoIterator<Item = (String, Entry)>,
    ) -> std::io::Result<()> {
        let mut file = CostsFile::read(path);
        file.entries.extend(measured);
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let tmp = dir.join(format!(
            ".{}.{}.tmp",
            path.file_name().and_then(|n| n.to_str()).unwrap_or(FILE),
            std::process::id()
        ));
        let written =
            std::fs::write(&tmp, file.render()).and_then(|()| std::fs::rename(&tmp, path));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }
}

/// A scenario file's content hash, as the cost file keys it (empty if it cannot be read).
pub fn file_hash(path: &Path) -> String {
    std::fs::read(path).map_or_else(|_| String::new(), |b| crate::report::json::content_hash(&b))
}

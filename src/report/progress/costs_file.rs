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
//! lines of the files the run did not measure kept (those of files no longer there dropped): to
//! a temporary file beside it, then renamed over it, so a reader never sees half a file and two
//! runs ending together leave one whole.

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
        // Lines of scenario files no longer there (a temporary directory's) are dropped, so the
        // file does not grow without bound.
        file.entries.retain(|p, _| Path::new(p).exists());
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

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("wakesim-costs-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("a scratch directory");
        d
    }

    fn entry(hash: &str, seeds: u64, secs: f64) -> Entry {
        Entry {
            hash: hash.into(),
            kind: "real host pi@0.99.1 in scenarios/real-pi".into(),
            cost: Measured {
                seeds,
                secs,
                fixed: secs / 2.0,
                per_seed: secs / 2.0 / seeds as f64,
            },
        }
    }

    /// A file's line is its prior while the file's content is the same; a changed file (another
    /// hash) or one never measured has none.
    #[test]
    fn a_remembered_cost_is_the_prior_of_the_same_content_only() {
        let mut f = CostsFile::default();
        f.entries
            .insert("/s/a.toml".into(), entry("00ff", 100, 8.0));
        let text = f.render();
        assert!(text.starts_with("wakesim-eta-costs\t1\t"), "{text}");
        let back = CostsFile::parse(&text).expect("its own rendering");
        assert_eq!(back, f);
        let p = back.prior("/s/a.toml", "00ff").expect("the same file");
        assert!(p.remembered && (p.secs(100.0) - 8.0).abs() < 1e-6, "{p:?}");
        assert_eq!(back.prior("/s/a.toml", "0100"), None, "changed since");
        assert_eq!(back.prior("/s/b.toml", "00ff"), None, "never measured");
    }

    /// Another version's file, a file cut short or edited by hand, and a missing one are all
    /// ignored as a whole (an empty cost file), never an error.
    #[test]
    fn a_stale_or_corrupt_cost_file_is_ignored() {
        let mut f = CostsFile::default();
        f.entries
            .insert("/s/a.toml".into(), entry("00ff", 100, 8.0));
        let good = f.render();
        let stale = good.replacen(env!("CARGO_PKG_VERSION"), "0.0.0-older", 1);
        assert_eq!(CostsFile::parse(&stale), None, "another version");
        assert_eq!(
            CostsFile::parse(&good.replacen("\t1\t", "\t2\t", 1)),
            None,
            "another format"
        );
        assert_eq!(CostsFile::parse(""), None, "empty");
        let line = good.lines().nth(1).expect("a line").to_string();
        for bad in [
            line.replacen("\t100\t", "\tmany\t", 1),
            line.replacen("\t100\t", "\t0\t", 1),
            line.replacen("\t8.000000\t", "\t-8\t", 1),
            line.replacen("\t8.000000\t", "\tNaN\t", 1),
            line.rsplit_once('\t').expect("fields").0.to_string(),
            line.clone() + "\textra",
        ] {
            let text = format!("{}\n{line}\n{bad}\n", header());
            assert_eq!(CostsFile::parse(&text), None, "{bad:?}");
        }
        let dir = scratch("corrupt");
        let path = dir.join(FILE);
        assert_eq!(CostsFile::read(&path), CostsFile::default(), "missing");
        std::fs::write(&path, b"\xff\xfe not text").expect("written");
        assert_eq!(CostsFile::read(&path), CostsFile::default(), "not UTF-8");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// An update writes the whole file by renaming a temporary file over it (the old file's
    /// inode is left as it was, no temporary file stays behind), keeps the lines of scenario
    /// files it did not measure that are still there, drops those of files gone, and replaces a
    /// corrupt file; a directory that cannot be made is an error for the caller to drop.
    #[test]
    fn an_update_is_written_whole_by_rename_and_merged() {
        use std::os::unix::fs::MetadataExt as _;
        let dir = scratch("update");
        let (kept, gone, new) = (
            dir.join("kept.toml"),
            dir.join("gone.toml"),
            dir.join("new.toml"),
        );
        std::fs::write(&kept, "").expect("written");
        std::fs::write(&new, "").expect("written");
        let key = |p: &Path| p.display().to_string();
        let path = dir.join("cache").join(FILE);
        CostsFile::update(
            &path,
            [
                (key(&kept), entry("01", 10, 1.0)),
                (key(&gone), entry("02", 10, 1.0)),
            ],
        )
        .expect("written");
        let before = std::fs::metadata(&path).expect("there").ino();
        CostsFile::update(
            &path,
            [
                (key(&new), entry("03", 20, 2.0)),
                (key(&kept), entry("04", 30, 3.0)),
            ],
        )
        .expect("written");
        let after = CostsFile::read(&path);
        let paths: Vec<&String> = after.entries.keys().collect();
        assert_eq!(
            paths,
            [&key(&kept), &key(&new)],
            "gone.toml is not there any more"
        );
        assert_eq!(
            after.entries[&key(&kept)].hash,
            "04",
            "the newer measurement"
        );
        assert_ne!(
            std::fs::metadata(&path).expect("there").ino(),
            before,
            "renamed over"
        );
        let left: Vec<_> = std::fs::read_dir(path.parent().expect("a directory"))
            .expect("listed")
            .map(|e| e.expect("an entry").file_name())
            .collect();
        assert_eq!(left, [FILE], "no temporary file left");
        std::fs::write(&path, "garbage\n").expect("written");
        CostsFile::update(&path, [(key(&new), entry("05", 20, 2.0))]).expect("written");
        assert_eq!(
            CostsFile::read(&path).entries.len(),
            1,
            "a corrupt file replaced"
        );
        let blocked = kept.join("cache").join(FILE);
        assert!(CostsFile::update(&blocked, [(key(&new), entry("05", 20, 2.0))]).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

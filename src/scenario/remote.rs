//! `wake = { extension = "..." }` on a real host (`host = "family@version"`): the code the real
//! host loads itself, checked into a [`RemoteSpec`] for the remote lane (`docs/remote-host.md`).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::adapter::{Err, RawExternal, bound};
use crate::error::Result;
use crate::family::{AnyFamily, HostKind};
use crate::limits::{REMOTE_START_TIMEOUT_MS_DEFAULT, REMOTE_TIMEOUT_MS_DEFAULT};
use crate::remote::{RemoteSpec, home};

/// Where the real hosts' drivers live: `hosts/` of the sources embedded in the binary, written
/// into the cache directory on first use (`remote::home`), never the tree wakesim was built in.
pub fn hosts_dir() -> std::result::Result<PathBuf, String> {
    home::sources().map(|d| d.join("hosts"))
}

impl RawExternal {
    /// A real host's wall-clock bounds, `timeout_ms` and `start_timeout_ms`, each checked and
    /// named by its key (the launcher's driver and a family's own driver share them).
    pub(super) fn remote_bounds(&self, err: Err<'_>) -> Result<(u64, u64)> {
        let timeout_ms = bound(
            &self.timeout_ms,
            "timeout_ms",
            REMOTE_TIMEOUT_MS_DEFAULT,
            err,
        )?;
        let start_timeout_ms = bound(
            &self.start_timeout_ms,
            "start_timeout_ms",
            REMOTE_START_TIMEOUT_MS_DEFAULT,
            err,
        )?;
        Ok((timeout_ms, start_timeout_ms))
    }

    /// The table of a real host's wake: the extension (relative to `cwd`), how its wake logic is
    /// reached (`deliver`), and the keys an adapter's table has too. Returns the spec and the
    /// wake's label.
    pub(super) fn validate_remote(
        &self,
        path: &Path,
        host: HostKind,
        origin: (PathBuf, usize, usize),
        err: Err<'_>,
    ) -> Result<(RemoteSpec, String)> {
        let real = host.real().expect("a real host");
        let family = host.family();
        // A family with a driver of its own (gptme) reads its wake table there.
        if let Some(driver) = family.own_driver() {
            return self.validate_own(path, host, driver, origin, err);
        }
        if let Some(key) = self.variant.as_ref().or(self.patch.as_ref()) {
            let message = format!(
                "`variant` and `patch` are for a real host with a driver of its own; {} loads `extension = \"...\"`",
                host.name()
            );
            return Err(err(key.span(), message));
        }
        let cwd = self.cwd(path, err)?;
        let (extension, package) = self.extension_path(&cwd, err)?;
        let deliver = self.deliver(family, err)?;
        let constants_ms = self.constants(err)?;
        let (timeout_ms, start_timeout_ms) = self.remote_bounds(err)?;
        // A version is pinned by its lock file (npm's for a Node host, pip's hashed requirements
        // for a Python one); `hosts/launch.mjs` installs it and starts the family's driver.
        let dir = format!("hosts/{}/{}", family.name(), real.version);
        let pinned = ["package-lock.json", "requirements.txt"];
        if !pinned.iter().any(|f| home::embedded(&format!("{dir}/{f}"))) {
            let message = format!(
                "{} is not pinned: no package-lock.json or requirements.txt in {dir}; pin it with `node hosts/launch.mjs {} {} --lock` (from the repository root), commit the two files it writes and build wakesim again (the binary carries the pins)",
                host.name(),
                family.name(),
                real.version
            );
            return Err(err(origin_span(self), message));
        }
        let hosts = hosts_dir().map_err(|e| err(origin_span(self), e))?;
        let wake = json!({
            "extension": extension.to_string_lossy(),
            "deliver": deliver,
            "options": self.options_json(),
            "constants_ms": constants_ms,
            "fresh_modules": self.fresh_modules.unwrap_or(false),
            "package": package.as_ref().map(|p| p.to_string_lossy()),
        });
        let label = self.name.clone().unwrap_or_else(|| {
            let name = extension
                .file_name()
                .map(|n| n.to_string_lossy().into_owned());
            name.unwrap_or_default()
        });
        let launcher = hosts.join("launch.mjs").to_string_lossy().into_owned();
        let spec = RemoteSpec {
            family: family.name(),
            version: real.version.to_string(),
            vocab: family.vocab(),
            wake,
            // The family's sections are read after `wake`; the scenario fills them in.
            sections: Value::Null,
            command: {
                let mut c = vec![
                    "node".to_string(),
                    launcher,
                    family.name().to_string(),
                    real.version.to_string(),
                ];
                // The launcher installs the extension's pinned package before the driver starts.
                if let Some(p) = &package {
                    c.push("--package".to_string());
                    c.push(p.to_string_lossy().into_owned());
                }
                c
            },
            cwd: hosts,
            constants_ms,
            timeout_ms,
            start_timeout_ms,
            origin,
        };
        Ok((spec, label))
    }

    /// The extension's file, and the pinned package directory holding it if any: relative to
    /// `cwd`; with `package`, inside the package's `node_modules` (there once the launcher
    /// installed it, so not checked here); with `checkout`, inside the directory the named
    /// environment variable gives (a scenario of a repository not on a registry is not run
    /// without it).
    fn extension_path(&self, cwd: &Path, err: Err<'_>) -> Result<(PathBuf, Option<PathBuf>)> {
        let Some(ext) = &self.extension else {
            unreachable!("a table without `extension` is read as an adapter's")
        };
        if let (Some(_), Some(c)) = (&self.package, &self.checkout) {
            let message = "give `package` (a pinned npm package) or `checkout` (a directory from an environment variable), not both";
            return Err(err(c.span(), message.to_string()));
        }
        if let Some(p) = &self.package {
            let dir = cwd.join(p.get_ref());
            let dir = match dir.canonicalize() {
                Ok(d) if d.join("package-lock.json").is_file() => d,
                _ => {
                    let message = format!(
                        "package `{}` is not pinned: no package.json and package-lock.json there",
                        dir.display()
                    );
                    return Err(err(p.span(), message));
                }
            };
            let file = dir.join("node_modules").join(ext.get_ref());
            return Ok((file, Some(dir)));
        }
        let base = match &self.checkout {
            Some(var) => checkout_dir(var.get_ref(), var.span(), err)?,
            None => cwd.to_path_buf(),
        };
        let extension = base.join(ext.get_ref());
        match extension.canonicalize() {
            Ok(p) if p.is_file() => Ok((p, None)),
            _ => {
                let message = format!("extension `{}` not found", extension.display());
                Err(err(ext.span(), message))
            }
        }
    }

    /// `deliver`: `factory`, `export:NAME`, `event:NAME`, or `peer:NAME` (a fake peer of the
    /// driver's, `NAME.mjs` in the directory its family declares (`Family::PEERS`), through
    /// which content reaches the extension by its own transport).
    fn deliver(&self, family: &dyn AnyFamily, err: Err<'_>) -> Result<String> {
        let Some(d) = &self.deliver else {
            return Ok("factory".to_string());
        };
        let v = d.get_ref();
        let named = |p: &str| v.strip_prefix(p).filter(|n| !n.is_empty());
        if let Some(peer) = named("peer:") {
            let Some(peers) = family.peers() else {
                let message = format!("{} real hosts have no fake peers", family.name());
                return Err(err(d.span(), message));
            };
            let plain = peer.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
            if !plain || !home::embedded(&format!("{peers}/{peer}.mjs")) {
                let message = format!("no fake peer `{peer}` ({peers}/{peer}.mjs)");
                return Err(err(d.span(), message));
            }
        } else if v != "factory" && named("export:").is_none() && named("event:").is_none() {
            let message = format!(
                "deliver `{v}` is not one of \"factory\", \"export:NAME\", \"event:NAME\", \"peer:NAME\""
            );
            return Err(err(d.span(), message));
        }
        Ok(v.clone())
    }

    /// `options`, as the JSON object handed on.
    pub(super) fn options_json(&self) -> Value {
        match &self.options {
            Some(t) => serde_json::to_value(t).unwrap_or_default(),
            None => Value::Object(Default::default()),
        }
    }
}

/// The directory an environment variable names (`checkout`): a scenario that needs a checkout
/// the user has is not run without one, and says how to give it.
fn checkout_dir(var: &str, span: std::ops::Range<usize>, err: Err<'_>) -> Result<PathBuf> {
    let Some(value) = std::env::var_os(var).filter(|v| !v.is_empty()) else {
        let message = format!(
            "not run: {var} is not set; this scenario loads an extension from a checkout you have \
             (set {var}=/path/to/checkout and run it again)"
        );
        return Err(err(span, message));
    };
    let dir = PathBuf::from(value);
    if !dir.is_dir() {
        let message = format!("{var}=`{}` is not a directory", dir.display());
        return Err(err(span, message));
    }
    Ok(dir)
}

/// The span errors about the table as a whole point at: its `extension`.
fn origin_span(x: &RawExternal) -> std::ops::Range<usize> {
    x.extension.as_ref().map_or(0..0, |e| e.span())
}

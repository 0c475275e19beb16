//! `wake = { extension = "..." }` on a real host (`host = "family@version"`): the code the real
//! host loads itself, checked into a [`RemoteSpec`] for the remote lane (`docs/remote-host.md`).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::adapter::{Err, RawExternal, bound};
use crate::error::Result;
use crate::family::HostKind;
use crate::limits::{REMOTE_START_TIMEOUT_MS_DEFAULT, REMOTE_TIMEOUT_MS_DEFAULT};
use crate::remote::RemoteSpec;

/// Where the real hosts' pinned packages and drivers live (`hosts/`, beside `Cargo.toml`).
pub fn hosts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("hosts")
}

impl RawExternal {
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
        let Some(ext) = &self.extension else {
            unreachable!("a table without `extension` is read as an adapter's")
        };
        let cwd = self.cwd(path, err)?;
        let extension = cwd.join(ext.get_ref());
        let extension = match extension.canonicalize() {
            Ok(p) if p.is_file() => p,
            _ => {
                let message = format!("extension `{}` not found", extension.display());
                return Err(err(ext.span(), message));
            }
        };
        let deliver = match &self.deliver {
            Some(d) => {
                let v = d.get_ref();
                let named = |p: &str| v.strip_prefix(p).is_some_and(|n| !n.is_empty());
                if v != "factory" && !named("export:") && !named("event:") {
                    let message = format!(
                        "deliver `{v}` is not one of \"factory\", \"export:NAME\", \"event:NAME\""
                    );
                    return Err(err(d.span(), message));
                }
                v.clone()
            }
            None => "factory".to_string(),
        };
        let constants_ms = self.constants(err)?;
        let timeout_ms = bound(&self.timeout_ms, REMOTE_TIMEOUT_MS_DEFAULT, err)?;
        let start_timeout_ms = bound(&self.start_timeout_ms, REMOTE_START_TIMEOUT_MS_DEFAULT, err)?;
        // A version is pinned by its lock file (npm's for a Node host, pip's hashed requirements
        // for a Python one); `hosts/launch.mjs` installs it and starts the family's driver.
        let hosts = hosts_dir();
        let dir = hosts.join(family.name()).join(real.version);
        let pinned = ["package-lock.json", "requirements.txt"];
        if !pinned.iter().any(|f| dir.join(f).is_file()) {
            let message = format!(
                "{} is not pinned: no package-lock.json or requirements.txt in {}",
                host.name(),
                dir.display()
            );
            return Err(err(origin_span(self), message));
        }
        let wake = json!({
            "extension": extension.to_string_lossy(),
            "deliver": deliver,
            "options": self.options_json(),
            "constants_ms": constants_ms,
            "fresh_modules": self.fresh_modules.unwrap_or(false),
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
            command: vec![
                "node".to_string(),
                launcher,
                family.name().to_string(),
                real.version.to_string(),
            ],
            cwd: hosts,
            constants_ms,
            timeout_ms,
            start_timeout_ms,
            origin,
        };
        Ok((spec, label))
    }

    /// `options`, as the JSON object handed on.
    pub(super) fn options_json(&self) -> Value {
        match &self.options {
            Some(t) => serde_json::to_value(t).unwrap_or_default(),
            None => Value::Object(Default::default()),
        }
    }
}

/// The span errors about the table as a whole point at: its `extension`.
fn origin_span(x: &RawExternal) -> std::ops::Range<usize> {
    x.extension.as_ref().map_or(0..0, |e| e.span())
}

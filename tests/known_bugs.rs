//! The known-bug pack (`scenarios/known-bugs/`, docs/known-bugs.md) and the real pi at any pinned
//! version. What this proves, without running pi (the scenarios' verdicts are the gate's, in
//! `tests/scenarios.rs`):
//! - every bug folder is whole: a trigger (an extension, or a gptme session's script), a scenario at an affected release expecting a named
//!   failure, one at a fixed release expecting a pass, and a README with the upstream link and
//!   the replay line of the affected scenario;
//! - `pi@X.Y.Z` is a real host for any version (judged like a declared one, with no model
//!   twin), and a version without a committed lock file is refused with the command that pins
//!   it, both by the scenario reader (exit 2, naming the file and line) and by the launcher;
//! - `wakesim conform` refuses a version that has no model twin instead of comparing it with a
//!   model it was never measured against.

mod common;

use std::path::Path;

use wakesim::family::{HostKind, Registry};
use wakesim::scenario::{Expect, Scenario};

#[test]
fn every_known_bug_folder_has_its_trigger_both_verdicts_and_a_readme() {
    let registry = Registry::builtin();
    let pack = common::root().join("scenarios/known-bugs");
    let mut folders = 0;
    for entry in std::fs::read_dir(&pack).expect("scenarios/known-bugs is readable") {
        let dir = entry.expect("an entry").path();
        if !dir.is_dir() {
            continue;
        }
        folders += 1;
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let files: Vec<_> = std::fs::read_dir(&dir)
            .expect("readable")
            .map(|e| e.expect("an entry").path())
            .collect();
        // The trigger: an extension doing what the reporter's code did (pi), or, where the
        // reporter's session is the model's own replies (gptme), the script every scenario of the
        // folder plays.
        let scripted = files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "toml"))
            .all(|f| {
                let text = std::fs::read_to_string(f).unwrap_or_default();
                text.contains("host = \"gptme-") && text.contains("script = [")
            });
        assert!(
            scripted
                || files
                    .iter()
                    .any(|f| f.extension().is_some_and(|e| e == "ts")),
            "{name}: no trigger (a .ts extension, or a gptme script in every scenario)"
        );
        let (mut failing, mut passing) = (Vec::new(), 0);
        for f in files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "toml"))
        {
            let scn = Scenario::load(f, &registry).unwrap_or_else(|e| panic!("{e}"));
            assert!(scn.remote.is_some(), "{}: not a real host", f.display());
            match scn.expect {
                Expect::Pass => passing += 1,
                Expect::Fail { .. } => failing.push(f.file_name().unwrap().to_owned()),
                _ => panic!("{}: expects neither a failure nor a pass", f.display()),
            }
        }
        assert!(
            !failing.is_empty(),
            "{name}: no scenario at an affected release"
        );
        assert!(passing > 0, "{name}: no scenario at a fixed release");
        let readme = std::fs::read_to_string(dir.join("README.md"))
            .unwrap_or_else(|_| panic!("{name}: no README.md"));
        assert!(
            readme.contains("https://github.com/"),
            "{name}: README names no upstream link"
        );
        for f in &failing {
            let replay = format!(
                "wakesim replay scenarios/known-bugs/{name}/{}",
                f.to_string_lossy()
            );
            assert!(
                readme.contains(&replay),
                "{name}: README lacks `{replay} --seed N`"
            );
        }
    }
    assert!(folders >= 6, "{folders} known bugs");
}

#[test]
fn any_pi_version_is_a_real_host_without_a_model_twin() {
    let declared = HostKind::from_name("pi@0.99.1").expect("declared");
    assert_eq!(declared.model().map(|m| m.name()), Some("pi"));
    let h = HostKind::from_name("pi@0.76.0").expect("an undeclared version is a real host");
    let real = h.real().expect("a real host");
    assert_eq!(real.version, "0.76.0");
    assert_eq!(h.family().name(), "pi");
    assert!(
        h.model().is_none(),
        "an undeclared version has no model twin"
    );
    // The same name is the same host.
    assert_eq!(HostKind::from_name("pi@0.76.0"), Some(h));
    for bad in [
        "pi@0.76",
        "pi@0.76.x",
        "pi@",
        "nosuch@1.0.0",
        "pi-1.6@1.0.0",
        "pi@1.0.0-rc1",
    ] {
        assert!(HostKind::from_name(bad).is_none(), "{bad}");
    }
}

#[test]
fn an_unpinned_version_is_refused_with_the_command_that_pins_it() {
    let dir = common::tempdir("known-bugs-unpinned");
    let file = dir.join("unpinned.toml");
    std::fs::write(dir.join("ext.ts"), "export default () => () => {};\n").expect("written");
    std::fs::write(
        &file,
        "name = \"unpinned\"\nhost = \"pi@0.77.7\"\nwake = { extension = \"ext.ts\" }\nseeds = 1\n\n[expect]\nverdict = \"pass\"\n",
    )
    .expect("written");
    let out = common::wakesim(&["run", &file.to_string_lossy()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unpinned.toml:3:"), "{stderr}");
    assert!(stderr.contains("pi@0.77.7 is not pinned"), "{stderr}");
    assert!(
        stderr.contains("node hosts/launch.mjs pi 0.77.7 --lock"),
        "{stderr}"
    );

    // The launcher, started by hand, says the same on its protocol channel.
    let launcher = std::process::Command::new("node")
        .args(["hosts/launch.mjs", "pi", "0.77.7"])
        .current_dir(common::root())
        .output()
        .expect("node runs");
    let line = String::from_utf8_lossy(&launcher.stdout);
    assert_eq!(launcher.status.code(), Some(1), "{line}");
    assert!(line.starts_with("{\"type\":\"error\""), "{line}");
    assert!(
        line.contains("node hosts/launch.mjs pi 0.77.7 --lock"),
        "{line}"
    );
    assert!(!Path::new(&common::root().join("hosts/pi/0.77.7")).exists());
}

#[test]
fn conform_refuses_a_version_without_a_model_twin() {
    let out = common::wakesim(&[
        "conform",
        "scenarios/known-bugs/pi-5115-follow-up-from-agent-end/fixed-0.78.0.toml",
        "--seeds",
        "0..1",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("pi@0.78.0 has no model twin: conformance is declared for pi@0.99.1"),
        "{stderr}"
    );
}

/// The real gptme driver drives a release by what its package has: gptme 0.33.0 runs the CLI
/// lane with its own loop (the #3843 scenarios), and a variant that patches a part 0.33.0 does not
/// have (B0 leaves out the wait hook, which 0.33.0 never had) or the server lane (no watch tool)
/// is refused when the driver starts, naming what the package lacks (exit 2, naming the
/// scenario's `wake`). The first run installs the pinned 0.33.0 venv (about a minute).
#[test]
fn a_gptme_release_is_refused_for_what_its_package_lacks() {
    let dir = common::tempdir("known-bugs-gptme-lacks");
    for (name, host, variant, lacks) in [
        (
            "b0.toml",
            "gptme-cli@0.33.0",
            "b0",
            "its package lacks the shell tool's background_wait hook",
        ),
        (
            "server.toml",
            "gptme-server@0.33.0",
            "w2",
            "its package lacks gptme.tools.watch, SessionManager.request_watch_wake",
        ),
    ] {
        let file = dir.join(name);
        let text = format!(
            "name = \"x\"\nhost = \"{host}\"\nwake = {{ variant = \"{variant}\" }}\nseeds = 1\n\n[expect]\nverdict = \"pass\"\n"
        );
        std::fs::write(&file, text).expect("written");
        let out = common::wakesim(&["run", &file.to_string_lossy()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(&format!("{name}:3")), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "gptme 0.33.0 cannot be driven as {}",
                &host[..host.find('@').unwrap()]
            )),
            "{stderr}"
        );
        assert!(stderr.contains(lacks), "{stderr}");
    }
}

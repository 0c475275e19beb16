//! The family promise: a host family written outside wakesim is one module (`tests/toy/`) plus
//! one registration line, and then runs like a built-in one. This test registers the toy family,
//! loads scenarios naming its host and wake logics, and holds both verdicts: the buggy logic
//! (`toy.forgets-when-busy`) breaks NO-LOSS, the fixed one (`toy.keeps-until-idle`) passes, and
//! an expectation the run does not meet fails the check (so the check can fail).

mod toy;

use wakesim::family::{HostKind, Registry, register};
use wakesim::testing::Check;

/// The one registration line, then the registry of every family's built-in wake logics.
fn registry() -> Registry {
    register::<toy::ToyFamily>().expect("the toy family registers");
    Registry::builtin()
}

/// A scenario of the toy host: 200 seeds of four messages and two user turns, the toy's race
/// window required, judged by `expect`.
fn scenario(wake: &str, expect: &str) -> String {
    format!(
        "name = \"toy: {wake}\"\nhost = \"toy\"\nwake = \"{wake}\"\nseeds = 200\n\n\
         [producers]\nmessages = 4\nuser_turns = 2\n\n[timing]\nbusy_ms = 400\n\n\
         [coverage]\nmust_reach = [\"toy-arrives-while-busy\"]\n\n[expect]\n{expect}\n"
    )
}

#[test]
fn the_buggy_logic_breaks_no_loss() {
    let registry = registry();
    let text = scenario(
        "toy.forgets-when-busy",
        "verdict = \"fail\"\ninvariant = \"no-loss\"",
    );
    Check::inline(&registry, "toy-forgets.toml", &text)
        .try_run()
        .unwrap_or_else(|f| panic!("the buggy toy logic should fail NO-LOSS: {f}"));
}

#[test]
fn the_buggy_logic_is_not_passed() {
    let registry = registry();
    let text = scenario("toy.forgets-when-busy", "verdict = \"pass\"");
    let failure = Check::inline(&registry, "toy-forgets-pass.toml", &text)
        .try_run()
        .expect_err("the buggy toy logic loses messages");
    let message = failure.to_string();
    assert!(message.contains("expected pass, but seed"), "{message}");
    assert!(message.contains("no-loss"), "{message}");
    assert!(
        message.contains("toy sender 1"),
        "the family names its senders: {message}"
    );
}

#[test]
fn the_fixed_logic_passes() {
    let registry = registry();
    let text = scenario("toy.keeps-until-idle", "verdict = \"pass\"");
    Check::inline(&registry, "toy-keeps.toml", &text)
        .try_run()
        .unwrap_or_else(|f| panic!("the fixed toy logic should pass: {f}"));
}

#[test]
fn the_toy_is_a_family_like_the_built_in_ones() {
    let registry = registry();
    let host = HostKind::from_name("toy").expect("the toy host is found by name");
    assert_eq!(host.family().name(), "toy");
    assert_eq!(registry.names_of("toy").len(), 2);
    // Registering again is a no-op; a family whose host name is taken is refused.
    register::<toy::ToyFamily>().expect("registering twice");
    // An adapter wake for a family without an adapter side is refused when the scenario loads.
    let text = "name = \"toy adapter\"\nhost = \"toy\"\nseeds = 10\nwake = { command = [\"node\", \"x.mjs\"] }\n[expect]\nverdict = \"pass\"\n";
    let err = Check::inline(&registry, "toy-adapter.toml", text)
        .try_run()
        .expect_err("no adapter side");
    assert!(err.to_string().contains("no adapter side"), "{err}");
}

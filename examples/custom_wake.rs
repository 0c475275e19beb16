//! Plug your own wake logic into wakesim without editing it: implement `PiWake`, register it under
//! a name, and run scenario files that name it.
//!
//! ```text
//! cargo run --example custom_wake
//! ```
//!
//! The logic below is G2 (`ctx.isIdle()` then nextTurn + a blank prompt) written from scratch; the
//! run shows wakesim catching its race (two prompts in preparation) and prints the replay line.

use std::path::Path;

use wakesim::engine::Runner;
use wakesim::family::Registry;
use wakesim::family::pi::api::{Ctx, CustomMessage, Message, Pi, PiWake, SendOptions};
use wakesim::report;
use wakesim::scenario::Scenario;
use wakesim::sim::msg::Payload;

#[derive(Default)]
struct MyIdleWake {
    latest: Option<Ctx>,
}

impl PiWake for MyIdleWake {
    fn on_session_start(&mut self, _pi: &mut Pi<'_>, ctx: Ctx) {
        self.latest = Some(ctx);
    }
    fn on_agent_start(&mut self, _pi: &mut Pi<'_>, ctx: Ctx) {
        self.latest = Some(ctx);
    }
    fn on_message(&mut self, pi: &mut Pi<'_>, msg: Message) {
        let idle = self.latest.is_some_and(|c| c.is_idle(pi) == Ok(true));
        if idle {
            pi.send_message(CustomMessage::carrying(msg.id), SendOptions::next_turn());
            pi.send_user_message(Payload::None, None);
        } else {
            pi.send_message(CustomMessage::carrying(msg.id), msg.default_options());
        }
    }
}

const SCENARIO: &str = r#"
name = "my wake logic under two quick messages"
host = "pi"
wake = "my.idle-wake"
seeds = 500
snapshot_seed = 0

[producers]
messages = { min = 2, max = 4 }
spacing_ms = { min = 0, max = 200 }
kinds = ["completion", "notification"]

[expect]
verdict = "pass"
"#;

fn main() {
    let registry = Registry::builtin().with_pi("my.idle-wake", "G2 written from scratch", || {
        Box::new(MyIdleWake::default())
    });
    let scn = Scenario::parse(Path::new("my-scenario.toml"), SCENARIO, &registry)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut runner = Runner::new(&registry);
    let rep = runner.run_scenario(&scn, 0..scn.seeds);
    println!(
        "{} seeds, {} failing; expectation {}",
        rep.seed_count(),
        rep.failures,
        if rep.met { "met" } else { "NOT met" }
    );
    if let Some(first) = rep.first_failure {
        let seed = first.seed;
        let r = runner.run_seed(&scn, seed, true);
        print!("{}", report::text::timeline(&scn, &r));
    }
}

//! A picture of one run (`wakesim replay --format html`): one self-contained page, inline CSS,
//! SVG and a little script, nothing fetched. Swimlanes for the producer, the wake logic and the
//! host (and users and faults when the run has them), one column per timeline line in order;
//! the host's state as background bands; each message an arrow from the line that made it to
//! the model request that delivered it (a dashed stub when none did); each violation a red mark
//! across the lanes where it fired, labelled with its invariant and message. Each event carries a
//! short label on the page (the call or handler's name); hovering shows its full timeline line and
//! clicking puts it, with its time, actor and host state, in the details panel under the picture.
//! A legend names the colour of each host-state band.

use std::fmt::Write;

use super::{Line, LineKind, lines, reproduce};
use crate::engine::{Outcome, RunResult, describe};
use crate::scenario::Scenario;
use crate::sim::record::Actor;

/// Horizontal room per timeline line, and the lanes' geometry, in pixels.
const STEP: usize = 18;
const LEFT: usize = 110;
const TOP: usize = 46;
const LANE_H: usize = 120;
/// An event's dot sits this far below its lane's top; its label runs up from it.
const DOT_Y: usize = 100;
/// The longest label beside a dot, in characters (the full line is in the details panel).
const LABEL_CHARS: usize = 15;
/// The longest violation label along its mark.
const VIOLATION_CHARS: usize = 55;

/// Background colours of host states, in order of first appearance.
const BANDS: [&str; 8] = [
    "#e8f1fb", "#fdf0dc", "#e6f5e9", "#f6e6f3", "#fff8d6", "#e9e7fb", "#dff4f4", "#f3eee6",
];

/// Escape text for HTML content and attribute values.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The lanes a run uses, top to bottom: producer, user and fault (only when present), wake
/// logic, host.
fn lanes(rows: &[Line]) -> Vec<Actor> {
    let has = |a: Actor| rows.iter().any(|l| l.actor == a);
    [
        Actor::Producer,
        Actor::User,
        Actor::Fault,
        Actor::Wake,
        Actor::Host,
    ]
    .into_iter()
    .filter(|a| matches!(a, Actor::Producer | Actor::Wake | Actor::Host) || has(*a))
    .collect()
}

fn lane_title(a: Actor) -> &'static str {
    match a {
        Actor::Producer => "producer",
        Actor::User => "user",
        Actor::Fault => "fault",
        Actor::Wake => "wake logic",
        Actor::Host => "host",
        Actor::Check => "checks",
    }
}

/// The page.
pub fn page(scn: &Scenario, r: &RunResult) -> String {
    let rows = lines(scn.host, &r.trace, &r.messages, r.outcome.violations());
    let lanes = lanes(&rows);
    let lane_y = |a: Actor| {
        let i = lanes
            .iter()
            .position(|x| *x == a)
            .unwrap_or(lanes.len() - 1);
        TOP + i * LANE_H + DOT_Y
    };
    let x = |i: usize| LEFT + STEP / 2 + i * STEP;
    let width = LEFT + rows.len().max(1) * STEP + 40;
    let height = TOP + lanes.len() * LANE_H + 10;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r##"<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">
<defs><marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#3465a4"/></marker></defs>
"##
    );
    let states = bands(&mut svg, &rows, x, height);
    for (i, a) in lanes.iter().enumerate() {
        let y = TOP + i * LANE_H;
        let _ = writeln!(
            svg,
            r##"<g class="lane" data-actor="{0}"><line x1="{LEFT}" y1="{1}" x2="{width}" y2="{1}" class="lane-line"/><text x="8" y="{1}" dy="4" class="lane-title">{0}</text><line x1="0" y1="{2}" x2="{width}" y2="{2}" class="lane-sep"/></g>"##,
            lane_title(*a),
            y + LANE_H / 2,
            y + LANE_H
        );
    }
    ticks(&mut svg, &rows, x);
    arrows(&mut svg, &rows, x, &lane_y, width);
    for (i, l) in rows.iter().enumerate() {
        let mut full = format!("{} ms · {} · {}", l.t, l.actor.name(), l.text);
        // A violation line has no host state of its own.
        if !l.state.is_empty() {
            full += &format!(" · host {}", l.state);
        }
        if l.kind == LineKind::Violation {
            let (invariant, message) = violation_parts(&l.text);
            let _ = writeln!(
                svg,
                r##"<g class="event violation" data-line="{0}" data-invariant="{4}"><title>{0}</title><line x1="{1}" y1="{TOP}" x2="{1}" y2="{2}"/><text x="{1}" y="{3}" text-anchor="middle">✗</text><text class="violation-label" transform="translate({5},{6}) rotate(-90)">{7}</text></g>"##,
                esc(&full),
                x(i),
                height - 10,
                TOP - 4,
                esc(invariant),
                x(i) + 12,
                height - 14,
                esc(&clip(&format!("{invariant}: {message}"), VIOLATION_CHARS)),
            );
            continue;
        }
        let shape = match l.kind {
            LineKind::Handler => "handler",
            LineKind::Call => "call",
            _ => "plain",
        };
        let _ = writeln!(
            svg,
            r##"<g class="event {shape}" data-line="{0}"><title>{0}</title><circle cx="{1}" cy="{2}" r="5"/><text class="label" transform="translate({3},{4}) rotate(-90)">{5}</text></g>"##,
            esc(&full),
            x(i),
            lane_y(l.actor),
            x(i) + 4,
            lane_y(l.actor) - 9,
            esc(&label(&l.text)),
        );
    }
    svg += "</svg>\n";
    document(scn, r, &svg, &states)
}

/// A line's short label: its call or handler's name (up to the first bracket), clipped.
fn label(text: &str) -> String {
    let head = text.split(['(', ':']).next().unwrap_or(text).trim();
    clip(if head.is_empty() { text } else { head }, LABEL_CHARS)
}

/// `s` cut to `n` characters, with an ellipsis where it was cut.
fn clip(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// A violation line `✗ invariant: message` as its invariant and message.
fn violation_parts(text: &str) -> (&str, &str) {
    let t = text.trim_start_matches('✗').trim_start();
    match t.split_once(": ") {
        Some((inv, msg)) => (inv, msg),
        None => (t, ""),
    }
}

/// The host state behind each line as background bands across every lane, labelled at the top.
fn bands<'a>(
    svg: &mut String,
    rows: &'a [Line],
    x: impl Fn(usize) -> usize,
    height: usize,
) -> Vec<&'a str> {
    let mut seen: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < rows.len() {
        let state = rows[i].state;
        let mut j = i + 1;
        while j < rows.len() && (rows[j].state == state || rows[j].state.is_empty()) {
            j += 1;
        }
        if !state.is_empty() {
            let k = seen.iter().position(|s| *s == state).unwrap_or_else(|| {
                seen.push(state);
                seen.len() - 1
            });
            let (x0, w) = (x(i) - STEP / 2, (j - i) * STEP);
            // A label only where it fits; hovering the band names its state anyway.
            let label = match w >= state.len() * 7 + 6 {
                true => format!(
                    r##"<text x="{}" y="{}" class="band-label">{}</text>"##,
                    x0 + 3,
                    TOP - 4,
                    esc(state)
                ),
                false => String::new(),
            };
            let _ = writeln!(
                svg,
                r##"<g class="band" data-state="{0}"><title>host state: {0}</title><rect x="{x0}" y="{1}" width="{w}" height="{2}" fill="{3}"/>{label}</g>"##,
                esc(state),
                TOP - 16,
                height - TOP + 16,
                BANDS[k % BANDS.len()],
            );
        }
        i = j;
    }
    seen
}

/// Time labels along the top, where the time changes and there is room.
fn ticks(svg: &mut String, rows: &[Line], x: impl Fn(usize) -> usize) {
    let mut last: Option<(u64, usize)> = None;
    for (i, l) in rows.iter().enumerate() {
        let room = last.is_none_or(|(t, at)| l.t != t && x(i) >= at + 60);
        if room {
            let _ = writeln!(
                svg,
                r##"<text class="tick" x="{}" y="14">{} ms</text>"##,
                x(i),
                l.t
            );
            last = Some((l.t, x(i)));
        }
    }
}

/// One arrow per message, from the line that made it to the request that delivered it; a dashed
/// stub to the page's end for a message no request delivered.
fn arrows(
    svg: &mut String,
    rows: &[Line],
    x: impl Fn(usize) -> usize,
    lane_y: &dyn Fn(Actor) -> usize,
    width: usize,
) {
    for (i, l) in rows.iter().enumerate() {
        for m in &l.produced {
            let (x0, y0) = (x(i), lane_y(l.actor));
            let to = (rows.iter().enumerate().skip(i)).find(|(_, d)| d.delivered.contains(m));
            match to {
                Some((j, d)) => {
                    let (x1, y1) = (x(j), lane_y(d.actor));
                    let mid = (x0 + x1) / 2;
                    let _ = writeln!(
                        svg,
                        r##"<path class="arrow" data-msg="{m}" d="M{x0},{y0} C{mid},{y0} {mid},{y1} {x1},{y1}" marker-end="url(#head)"><title>{m}: made at {} ms, delivered at {} ms</title></path>"##,
                        l.t, d.t
                    );
                }
                None => {
                    let _ = writeln!(
                        svg,
                        r##"<path class="arrow undelivered" data-msg="{m}" d="M{x0},{y0} L{},{y0}"><title>{m}: made at {} ms, never delivered</title></path>"##,
                        width - 10,
                        l.t
                    );
                }
            }
        }
    }
}

/// The HTML document around the SVG: header, verdict, legend, the tooltip's script.
fn document(scn: &Scenario, r: &RunResult, svg: &str, states: &[&str]) -> String {
    let mut band_legend = String::new();
    for (k, st) in states.iter().enumerate() {
        let _ = write!(
            band_legend,
            r##"<span class="state" data-state="{0}"><i style="background:{1}"></i>{0}</span>"##,
            esc(st),
            BANDS[k % BANDS.len()]
        );
    }
    let verdict = match &r.outcome {
        Outcome::Pass => format!("✓ no invariant broken · {} events", r.events),
        o => format!("✗ it {} · {}", describe(o), reproduce(scn, r)),
    };
    let title = format!("{} · seed {}", scn.path.display(), r.seed);
    format!(
        r##"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>wakesim · {title}</title>
<style>
body {{ font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #222; }}
h1 {{ font-size: 16px; margin: 0 0 4px; }}
p {{ margin: 2px 0 8px; }}
.verdict.fail {{ color: #a40000; }} .verdict.pass {{ color: #2e7d32; }}
#scroll {{ overflow-x: auto; border: 1px solid #ccc; }}
.lane-line {{ stroke: #bbb; stroke-dasharray: 2 3; }}
.lane-sep {{ stroke: #ddd; }}
.lane-title {{ font-weight: 600; font-size: 12px; }}
.band-label {{ font-size: 10px; fill: #666; }}
.tick {{ font-size: 10px; fill: #555; }}
.event circle {{ fill: #555; stroke: #fff; stroke-width: 1.5; cursor: pointer; }}
.event.handler circle {{ fill: #3465a4; }}
.event.call circle {{ fill: #f57900; }}
.event:hover circle {{ r: 7; }}
.violation line {{ stroke: #cc0000; stroke-width: 2; }}
.violation text {{ fill: #cc0000; font-weight: 700; cursor: pointer; }}
.arrow {{ fill: none; stroke: #3465a4; stroke-width: 1.2; opacity: .7; }}
.arrow.undelivered {{ stroke: #cc0000; stroke-dasharray: 4 3; }}
#tip {{ position: fixed; display: none; background: #222; color: #fff; padding: 4px 8px;
  border-radius: 4px; font: 12px monospace; max-width: 70ch; pointer-events: none; }}
.legend span {{ margin-right: 14px; }}
.legend .state i {{ display: inline-block; width: 12px; height: 12px; margin-right: 4px;
  vertical-align: -2px; border: 1px solid #bbb; }}
.label {{ font-size: 9px; fill: #333; pointer-events: none; }}
.violation-label {{ font-size: 10px; fill: #a40000; font-weight: 600; }}
.event.selected circle {{ stroke: #000; stroke-width: 2.5; }}
#details {{ margin-top: 8px; padding: 6px 8px; border: 1px solid #ccc; min-height: 1.4em;
  font: 12px monospace; white-space: pre-wrap; }}
</style></head>
<body>
<h1>{title}</h1>
<p>host {host} · wake {wake} · {mix}</p>
<p class="verdict {cls}">{verdict}</p>
<p class="legend"><span>● blue: a handler called</span><span>● orange: a call into the host</span><span>→ a message, made to delivered</span><span style="color:#cc0000">✗ a violation</span></p>
<p class="legend bands">host state (background bands): {band_legend}</p>
<div id="scroll">
{svg}</div>
<div id="details">click an event for its details</div>
<div id="tip"></div>
<script>
(function () {{
  var tip = document.getElementById("tip");
  var events = document.querySelectorAll("#timeline .event");
  events.forEach(function (g) {{
    g.addEventListener("mousemove", function (e) {{
      tip.textContent = g.getAttribute("data-line");
      tip.style.display = "block";
      tip.style.left = (e.clientX + 12) + "px";
      tip.style.top = (e.clientY + 12) + "px";
    }});
    g.addEventListener("mouseleave", function () {{ tip.style.display = "none"; }});
    g.addEventListener("click", function () {{ show(g); }});
  }});
  var details = document.getElementById("details");
  function show(g) {{
    events.forEach(function (e) {{ e.classList.remove("selected"); }});
    g.classList.add("selected");
    details.textContent = g.getAttribute("data-line");
  }}
  var b = document.body;
  b.setAttribute("data-lanes", document.querySelectorAll("#timeline .lane").length);
  b.setAttribute("data-events", events.length);
  b.setAttribute("data-arrows", document.querySelectorAll("#timeline .arrow").length);
  b.setAttribute("data-violations", document.querySelectorAll("#timeline .violation").length);
  b.setAttribute("data-bands", document.querySelectorAll("#timeline .band").length);
  b.setAttribute("data-labels", document.querySelectorAll("#timeline .event .label").length);
  b.setAttribute("data-legend-states", document.querySelectorAll(".legend .state").length);
  // `#selftest`: click the first violation (else the first event) as a person would, so a
  // headless browser's DOM dump shows what the click put in the details panel.
  if (location.hash === "#selftest" && events.length) {{
    var first = document.querySelector("#timeline .violation") || events[0];
    first.dispatchEvent(new MouseEvent("click", {{ bubbles: true }}));
    b.setAttribute("data-clicked", details.textContent);
  }}
  b.setAttribute("data-ready", "1");
}})();
</script>
</body></html>
"##,
        title = esc(&title),
        host = esc(scn.host.version_label()),
        wake = esc(&scn.wake),
        mix = esc(&r.mix.to_string()),
        cls = if r.outcome.is_pass() { "pass" } else { "fail" },
        verdict = esc(&verdict),
        band_legend = band_legend,
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_markup() {
        assert_eq!(
            super::esc(r#"<a href="x">&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;"
        );
    }
}

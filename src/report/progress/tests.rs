use super::*;

/// The estimator replayed over a log's records gives the ETA it would have shown at each
/// tick, from the log's times and priors alone: a scenario measured at twice its prior, then
/// one at a thousand times its prior; a log of an older build, without priors, replays from
/// each scenario's class prior; other priors can be given.
#[test]
fn a_replayed_log_recomputes_each_ticks_eta_from_the_logs_times() {
    let log = "scenario\t0\t1000\tbuilt-in\ta.toml\t0\t1\tderived\n\
               scenario\t1\t10\tbuilt-in\tb.toml\t0\t1\tderived\n\
               start\t0.000\t0\n\
               advance\t1000.000\t500\n\
               tick\t1000.000\t500\t1010\t-\t1\t0\t0\t?\n\
               advance\t2000.000\t500\n\
               start\t2000.000\t1\n\
               advance\t4000.000\t2\n\
               tick\t4000.000\t1002\t1010\t-\t0\t3\t1\t?\n\
               end\t12000.000\t1010\t1010\t3\t1\n";
    let etas = |out: &str| -> Vec<(String, f64)> {
        (out.lines())
            .filter(|l| l.starts_with("tick"))
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                (
                    format!("{} {} {}", f[1], f[2], f[6]),
                    f[4].parse().expect("an ETA"),
                )
            })
            .collect()
    };
    let near = |a: f64, b: f64| (a - b).abs() < 0.01 * b;
    let out = replay(log).expect("a log");
    assert!(out.ends_with("end\t12000.000\t1010\t1010\t3\t1\n"), "{out}");
    let got = etas(&out);
    // Half the first scenario's seeds in twice their prior: 1000 s left of it, 20 s of the
    // second; then the second's 2 seeds in 2000 s: about 8000 s for its 8 left.
    assert_eq!(got[0].0, "1000.000 500 0");
    assert!(near(got[0].1, 1020.0) && near(got[1].1, 8000.0), "{got:?}");
    // Other priors over the same log: the second scenario at 10 s a seed.
    let other = |_: &str, path: &str| (path == "b.toml").then(|| Prior::derived(0.0, 10.0));
    let got = etas(&replay_with(log, &other).expect("a log"));
    assert!(near(got[0].1, 1200.0), "{got:?}");
    // No priors in the log: the class's (a built-in's 12 µs a seed): an ETA still.
    let bare: String = (log.lines())
        .map(|l| match l.starts_with("scenario") {
            true => l.split('\t').take(5).collect::<Vec<_>>().join("\t") + "\n",
            false => l.to_string() + "\n",
        })
        .collect();
    assert!(
        etas(&replay(&bare).expect("a log"))
            .iter()
            .all(|(_, e)| *e > 0.0)
    );
    let bad = replay("tick\tsoon\n").expect_err("a bad time");
    assert!(bad.starts_with("line 1: not an ETA log record"), "{bad}");
    let bad = replay("scenario\t0\t10\tbuilt-in\ta.toml\t1.0\n").expect_err("half a prior");
    assert!(bad.starts_with("line 1: not an ETA log record"), "{bad}");
}

/// A scratch directory of this test process.
fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("wakesim-eta-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("a scratch directory");
    d
}

/// A run writes each scenario's measured cost to the cost file when it ends; the next run of
/// the same file starts from it (its ETA log says `remembered`), and once the file changes
/// it starts from the file's derived prior again.
#[test]
fn a_run_remembers_its_costs_for_the_next() {
    let dir = scratch("remember");
    let reg = crate::family::Registry::builtin();
    let text = std::fs::read_to_string("scenarios/pi/g0-idle-wake-skips-harness.toml")
        .expect("a scenario");
    let path = dir.join("s.toml");
    std::fs::write(&path, &text).expect("written");
    let costs = dir.join("cache").join(costs_file::FILE);
    let run = |log: &str| {
        let scn = Scenario::load(&path, &reg).expect("a scenario");
        let log_path = dir.join(log);
        let file = std::fs::File::create(&log_path).expect("a log");
        let p = Progress::remembering(
            std::slice::from_ref(&scn),
            |_| 0..200,
            Some(file),
            Some(costs.clone()),
        );
        p.start(0, &scn);
        p.advance(&ScenarioReport::new(0..100));
        p.advance(&ScenarioReport::new(100..200));
        p.skip(0, 0);
        p.finish();
        let log = std::fs::read_to_string(&log_path).expect("the log");
        log.lines().next().expect("a scenario record").to_string()
    };
    assert!(run("1.tsv").ends_with("\tderived"), "no cost file yet");
    let file = CostsFile::read(&costs);
    let abs = std::fs::canonicalize(&path)
        .expect("there")
        .display()
        .to_string();
    let entry = file.entries.get(&abs).expect("the scenario remembered");
    assert_eq!(
        (entry.cost.seeds, entry.kind.as_str()),
        (
            200,
            eta::kind(&Scenario::load(&path, &reg).unwrap()).as_str()
        )
    );
    assert!(run("2.tsv").ends_with("\tremembered"), "remembered");
    std::fs::write(&path, text + "\n# changed\n").expect("written");
    assert!(
        run("3.tsv").ends_with("\tderived"),
        "a changed file is a new one"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Not a check: a helper to measure this build's estimator on a real run's log.
/// `WAKESIM_ETA_REPLAY=IN WAKESIM_ETA_REPLAY_OUT=OUT cargo test --lib -- --ignored
/// replay_an_eta_log` writes the ticks it would have shown to OUT, for
/// `scripts/eta-accuracy.py OUT`. The priors are the log's own, or with
/// `WAKESIM_ETA_REPLAY_PRIORS=derived` those this build derives from the scenario files (read
/// at the log's paths, from the crate's root), or with `WAKESIM_ETA_REPLAY_PRIORS=FILE` those
/// a cost file remembers, as a run would start from them.
#[test]
#[ignore = "a measuring helper, run by hand over a WAKESIM_ETA_LOG file"]
fn replay_an_eta_log() {
    let (Some(input), Some(output)) = (
        std::env::var_os("WAKESIM_ETA_REPLAY"),
        std::env::var_os("WAKESIM_ETA_REPLAY_OUT"),
    ) else {
        panic!("set WAKESIM_ETA_REPLAY=IN and WAKESIM_ETA_REPLAY_OUT=OUT");
    };
    let log = std::fs::read_to_string(&input).expect("the ETA log");
    let priors = std::env::var("WAKESIM_ETA_REPLAY_PRIORS").unwrap_or_default();
    let mut by_path = std::collections::BTreeMap::new();
    let mut relabelled = String::new();
    if !priors.is_empty() && priors != "logged" {
        let reg = crate::family::Registry::builtin();
        let paths: Vec<&str> = (log.lines())
            .filter_map(|l| l.strip_prefix("scenario\t"))
            .filter_map(|l| l.split('\t').nth(3))
            .collect();
        let scns: Vec<Scenario> = (paths.iter())
            .map(|p| Scenario::load(std::path::Path::new(p), &reg).expect("a scenario"))
            .collect();
        let kinds: Vec<String> = scns.iter().map(kind).collect();
        let planned: Vec<u64> = scns.iter().map(|s| s.seeds).collect();
        let derived: Vec<Prior> = scns.iter().map(eta::prior).collect();
        let known = match priors.as_str() {
            "derived" => CostsFile::default(),
            file => CostsFile::read(std::path::Path::new(file)),
        };
        let remembered: Vec<Option<Prior>> = (scns.iter())
            .map(|s| {
                let abs = std::fs::canonicalize(&s.path).expect("there");
                known.prior(&abs.display().to_string(), &costs_file::file_hash(&s.path))
            })
            .collect();
        let all = eta::calibrate(&kinds, &planned, &derived, &remembered);
        by_path = paths.iter().map(|p| p.to_string()).zip(all).collect();
        // This build's kinds, in place of the log's.
        let mut k = kinds.iter();
        for l in log.lines() {
            let mut f: Vec<&str> = l.split('\t').collect();
            if f[0] == "scenario"
                && let Some(kind) = k.next()
            {
                f[3] = kind;
            }
            relabelled += &(f.join("\t") + "\n");
        }
    }
    let log = if relabelled.is_empty() {
        log
    } else {
        relabelled
    };
    let log = log.as_str();
    let out = replay_with(log, &|_, path| by_path.get(path).copied())
        .unwrap_or_else(|e| panic!("{input:?}: {e}"));
    std::fs::write(&output, out).expect("the replayed log");
}

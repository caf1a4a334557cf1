//! An aggregated API server killed under load (issue 26's check): the wardle example behind the
//! main `apiary` server (`tests/common/wardle.rs`), driven through the aggregator by concurrent
//! clients — HTTP/1.1 and HTTP/2 connections kept alive, creating, getting and listing
//! flunders, a few watches of flunders, and a client of main's own groups — when wardle gets
//! `kill -9`:
//!
//! - every proxied request ends within a bound, as a complete success or a `503` `Status`
//!   (kube-aggregator answers 503 when the backend cannot be reached); only a request in flight
//!   at the kill may end as a broken connection (kube's proxy aborts a response whose backend
//!   went away mid-body), and never as a success with a truncated body; no other code;
//! - every watch open at the kill ends within a bound (closed, broken or an `ERROR` event);
//! - main's own groups and discovery never fail;
//! - the APIService turns `Available=False` (`FailedDiscoveryCheck`) within kube-aggregator's
//!   check interval, and the aggregator keeps no connection to the dead server;
//! - wardle started again on the same port and data directory: the APIServices turn
//!   `Available` again, every create acknowledged before the kill is there, the load (watches
//!   included) succeeds again, and the aggregator's connections and file descriptors do not
//!   grow.

mod common;
#[path = "common/crates.rs"]
mod crates;
#[path = "common/kubectl.rs"]
mod kubectl;
#[path = "common/load.rs"]
mod load;
#[path = "common/wardle.rs"]
mod wardle;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use load::{Load, Outcome, admin_client, fd_count, sockets_to, wait_until};
use serde_json::Value;
use wardle::{Aggregated, V1ALPHA1, V1BETA1, port_of};

/// Clients creating, getting and listing flunders (half on HTTP/1.1, half on HTTP/2).
const WORKERS: usize = 8;

/// Clients keeping a watch of flunders open (half on HTTP/1.1, half on HTTP/2).
const WATCHERS: usize = 4;

/// How long the load runs before the kill and after the restart.
const LOAD: Duration = Duration::from_secs(3);

/// How long a watch open at the kill may take to end.
const WATCH_END_BOUND: Duration = Duration::from_secs(10);

/// How long the APIService may take to turn unavailable: kube-aggregator's remote
/// availability controller checks every APIService again every 30 s, and one check waits up to
/// 6 s for its answers.
const AVAILABILITY_BOUND: Duration = Duration::from_secs(36);

/// How long the aggregator may keep a connection to the killed server.
const CONNECTIONS_BOUND: Duration = Duration::from_secs(10);

/// The `Available` condition of APIService `name`: (status, reason, message).
async fn available(client: &reqwest::Client, base: &str, name: &str) -> (String, String, String) {
    let url = format!("{base}/apis/apiregistration.k8s.io/v1/apiservices/{name}");
    let resp = client
        .get(url)
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET apiservice {name}: {e}"));
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    let conditions = body["status"]["conditions"].as_array().cloned();
    let c = conditions
        .unwrap_or_default()
        .into_iter()
        .find(|c| c["type"] == "Available")
        .unwrap_or(Value::Null);
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    (s(&c["status"]), s(&c["reason"]), s(&c["message"]))
}

#[test]
fn an_aggregated_server_killed_under_load() {
    let mut setup = Aggregated::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let admin = admin_client(&setup.main, false);
    let base = setup.main.base.clone();
    let apiary = setup.main.pid();
    let wardle_port = port_of(&setup.wardle);
    let fds_before = fd_count(apiary);
    let wardle_sockets_before = sockets_to(apiary, wardle_port).len();

    // The load: workers, watchers, and a client of main's own groups.
    let t0 = Instant::now();
    let load = Load::start(rt.handle(), &setup.main, WORKERS, WATCHERS);
    wait_until(Duration::from_secs(30), "the load to get going", || {
        load.acknowledged().len() >= 2 * WORKERS && load.open_watches() == WATCHERS
    });
    std::thread::sleep(LOAD);
    let connections_under_load = sockets_to(apiary, wardle_port);
    assert!(
        !connections_under_load.is_empty(),
        "the aggregator has no connection to wardle under load"
    );
    let acknowledged_before_kill = load.acknowledged();

    // kill -9 mid-load.
    let killed_at = Instant::now();
    setup.wardle.kill();

    // Every watch open at the kill ends.
    wait_until(
        WATCH_END_BOUND,
        "the watches open at the kill to end",
        || {
            load.watches()
                .iter()
                .filter(|w| w.opened < killed_at)
                .all(|w| w.ended.is_some())
        },
    );

    // The APIServices turn unavailable, with kube-aggregator's reason.
    let mut unavailable = Vec::new();
    for name in [V1ALPHA1, V1BETA1] {
        let deadline = killed_at + AVAILABILITY_BOUND;
        let condition = loop {
            let c = rt.block_on(available(&admin, &base, name));
            if c.0 == "False" || Instant::now() > deadline {
                break c;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        assert_eq!(
            condition.0, "False",
            "{name} is still available: {condition:?}"
        );
        assert_eq!(condition.1, "FailedDiscoveryCheck", "{name}: {condition:?}");
        assert!(
            condition.2.starts_with(&format!(
                "failing or missing response from https://localhost:{wardle_port}/apis/wardle.example.com/"
            )),
            "{name}: {condition:?}"
        );
        unavailable.push((name, killed_at.elapsed(), condition.2));
    }

    // No connection to the dead server is kept (a connection the peer closed is dropped).
    wait_until(
        CONNECTIONS_BOUND,
        "the aggregator to drop its connections to the killed server",
        || sockets_to(apiary, wardle_port).is_empty(),
    );

    // The load meets wardle's absence for a while: 503s.
    let down_since = Instant::now();
    wait_until(Duration::from_secs(10), "503s while wardle is down", || {
        load.records()
            .iter()
            .filter(|r| r.started > down_since && r.proxied)
            .filter(|r| matches!(r.outcome, Outcome::Unavailable(_)))
            .count()
            >= WORKERS
    });

    // Started again on the same port and data directory.
    setup.wardle = setup.start_wardle(Some(wardle_port));
    assert_eq!(port_of(&setup.wardle), wardle_port);
    let restarted_at = Instant::now();
    for name in [V1ALPHA1, V1BETA1] {
        let deadline = restarted_at + AVAILABILITY_BOUND;
        let condition = loop {
            let c = rt.block_on(available(&admin, &base, name));
            if c.0 == "True" || Instant::now() > deadline {
                break c;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        assert_eq!(
            condition.0, "True",
            "{name} is not available again: {condition:?}"
        );
        assert_eq!(condition.1, "Passed", "{name}: {condition:?}");
    }
    let available_again = restarted_at.elapsed();
    // The proxy follows the condition: from the first success on, everything succeeds.
    let flunders = format!("{base}{}", load::FLUNDERS);
    wait_until(
        Duration::from_secs(10),
        "a list through the aggregator",
        || {
            rt.block_on(admin.get(&flunders).send())
                .is_ok_and(|r| r.status().as_u16() == 200)
        },
    );
    let resumed_at = Instant::now();
    std::thread::sleep(LOAD);
    // Every watcher watches again (opened after the restart) and sees the creates.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let watches = load.watches();
        let watching = |i: usize| {
            watches
                .iter()
                .any(|w| w.watcher == i && w.opened > restarted_at && w.events > 0)
        };
        if (0..WATCHERS).all(watching) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not every watcher watches again after the restart: {watches:#?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let connections_resumed = sockets_to(apiary, wardle_port);
    let report = load.stop(&rt);

    // Every request ended within its bound, as a success or a 503 Status; broken only in
    // flight at the kill.
    let records = report.records;
    let at = |t: Instant| t.saturating_duration_since(t0).as_secs_f64();
    let mut wrong: Vec<String> = Vec::new();
    for r in &records {
        let in_flight_at_kill = r.started < killed_at && r.ended >= killed_at;
        let after_resume = r.started >= resumed_at;
        let before_kill = r.ended < killed_at;
        let why = match &r.outcome {
            Outcome::Ok => continue,
            Outcome::Wrong(_) => "",
            Outcome::Broken(_) if !r.proxied || !in_flight_at_kill => "broken outside the kill: ",
            Outcome::Unavailable(_) if !r.proxied || before_kill || after_resume => {
                "503 while wardle was up: "
            }
            Outcome::Broken(_) | Outcome::Unavailable(_) => continue,
        };
        wrong.push(format!("{why}{}", r.describe(t0)));
    }
    assert!(
        wrong.is_empty(),
        "{} of {} requests ended wrongly (kill at {:.3}s, resumed at {:.3}s), the first ones:\n{}",
        wrong.len(),
        records.len(),
        at(killed_at),
        at(resumed_at),
        wrong[..wrong.len().min(30)].join("\n")
    );
    let count = |f: &dyn Fn(&load::Record) -> bool| records.iter().filter(|r| f(r)).count();
    let own_during_outage =
        count(&|r| !r.proxied && r.started > killed_at && r.started < resumed_at);
    assert!(
        own_during_outage > 0,
        "main's groups were not asked during the outage"
    );
    for http2 in [false, true] {
        assert!(
            count(&|r| r.proxied
                && r.http2 == http2
                && r.started >= resumed_at
                && matches!(r.outcome, Outcome::Ok))
                > 0,
            "no proxied success after the restart on HTTP/{}",
            if http2 { "2" } else { "1.1" }
        );
    }
    // The watches open at the kill ended within the bound, and none failed otherwise.
    for w in &report.watches {
        assert!(w.bad_events.is_empty(), "{w:?}");
        let stopped = matches!(w.end, Some(load::WatchEnd::Stopped));
        assert!(
            stopped || w.opened < killed_at,
            "a watch opened after the kill ended by itself: {w:?}"
        );
        if w.opened < killed_at {
            let ended = w.ended.unwrap_or_else(|| panic!("{w:?} never ended"));
            assert!(ended >= killed_at, "{w:?} ended before the kill");
            assert!(ended - killed_at <= WATCH_END_BOUND, "{w:?}");
        }
    }

    // Every create acknowledged before the kill survived it.
    let listed: BTreeSet<String> = rt.block_on(async {
        let resp = admin
            .get(&flunders)
            .send()
            .await
            .unwrap_or_else(|e| panic!("list: {e}"));
        assert_eq!(resp.status().as_u16(), 200);
        let list: Value = resp.json().await.unwrap_or(Value::Null);
        list["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    });
    let lost: Vec<&String> = acknowledged_before_kill.difference(&listed).collect();
    assert!(lost.is_empty(), "acknowledged creates lost: {lost:?}");
    let lost_later: Vec<&String> = report.acknowledged.difference(&listed).collect();
    assert!(
        lost_later.is_empty(),
        "acknowledged creates lost: {lost_later:?}"
    );

    // Hygiene: with the load stopped, the aggregator keeps no more idle connections to wardle
    // than its pool's bound and merged discovery's client (one), and its
    // file descriptors come back to where they were.
    let mut idle = Vec::new();
    wait_until(
        CONNECTIONS_BOUND,
        "the aggregator's idle connections to wardle to be bounded",
        || {
            idle = sockets_to(apiary, wardle_port);
            idle.len() <= aggregator::transport::MAX_IDLE_PER_HOST + 1
        },
    );
    drop(admin);
    let mut fds_after = 0;
    wait_until(
        Duration::from_secs(10),
        "the aggregator's file descriptors to come back",
        || {
            // Connections to wardle are pooled (idle ones kept); every other descriptor must
            // come back to where it was before the load.
            fds_after = fd_count(apiary) - sockets_to(apiary, wardle_port).len();
            fds_after <= fds_before - wardle_sockets_before + 4
        },
    );
    let messages: BTreeSet<&str> = records
        .iter()
        .filter_map(|r| match &r.outcome {
            Outcome::Unavailable(m) | Outcome::Broken(m) => Some(m.as_str()),
            _ => None,
        })
        .collect();
    let ends: Vec<String> = report
        .watches
        .iter()
        .filter(|w| w.opened < killed_at)
        .map(|w| format!("{:?} after {} events", w.end, w.events))
        .collect();
    eprintln!(
        "{} requests ({} broken at the kill, {} answered 503), {} watches; unavailable after {:?}; \
         available again {:?} after the restart; connections to wardle: {} under load, {} after \
         the restart, {} idle at the end; file descriptors {} before, {} after (connections to wardle aside)\n\
         the watches open at the kill: {ends:#?}\nthe failures' messages: {messages:#?}",
        records.len(),
        count(&|r| matches!(r.outcome, Outcome::Broken(_))),
        count(&|r| matches!(r.outcome, Outcome::Unavailable(_))),
        report.watches.len(),
        unavailable,
        available_again,
        connections_under_load.len(),
        connections_resumed.len(),
        idle.len(),
        fds_before - wardle_sockets_before,
        fds_after,
    );
}

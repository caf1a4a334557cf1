//! The recorder's watchers: each opens watches one after another, from a random start (unset,
//! `0`, a resourceVersion seen, after a bookmark, with initial events), reads each for a while
//! and records every event it delivered with its time.

use super::*;

/// The query of a watch starting at `start`.
fn watch_query(start: &WatchStart, bookmarks: bool, seconds: u64) -> String {
    let mut query = format!("watch=true&timeoutSeconds={seconds}");
    match start {
        WatchStart::Unset => {}
        WatchStart::Zero => query.push_str("&resourceVersion=0"),
        WatchStart::From(rv) => query.push_str(&format!("&resourceVersion={rv}")),
        WatchStart::InitialEvents(rv) => {
            query.push_str("&sendInitialEvents=true&resourceVersionMatch=NotOlderThan");
            if let Some(rv) = rv {
                query.push_str(&format!("&resourceVersion={rv}"));
            }
        }
    }
    if bookmarks {
        query.push_str("&allowWatchBookmarks=true");
    }
    query
}

/// One line of a watch stream as an event; `None` if it is not one.
fn watch_event(shared: &Shared, line: &[u8]) -> Option<WatchEvent> {
    let event: Value = serde_json::from_slice(line).ok()?;
    let object = &event["object"];
    let kind = match event["type"].as_str()? {
        "ADDED" => ChangeKind::Added,
        "MODIFIED" => ChangeKind::Modified,
        "DELETED" => ChangeKind::Deleted,
        "BOOKMARK" => {
            return Some(WatchEvent::Bookmark {
                rv: resource_version(object)?,
                initial_events_end: object["metadata"]["annotations"][INITIAL_EVENTS_END] == "true",
            });
        }
        "ERROR" => {
            return Some(WatchEvent::Error {
                code: u16::try_from(object["code"].as_u64()?).ok()?,
            });
        }
        _ => return None,
    };
    Some(WatchEvent::Change {
        kind,
        key: shared.key(object["metadata"]["name"].as_str()?),
        rv: resource_version(object)?,
        value: value_of(object),
    })
}

/// Opens one watch and reads it for `read_for` (or until it ends or the run stops); `None` when
/// the request got no answer.
async fn watch_once(
    shared: &Shared,
    id: usize,
    endpoint: &Endpoint,
    start: WatchStart,
    bookmarks: bool,
    read_for: Duration,
) -> Option<WatchRecord> {
    let seconds = read_for.as_secs().max(1);
    let url = format!(
        "{}?{}",
        shared.collection(endpoint),
        watch_query(&start, bookmarks, seconds)
    );
    let opened = shared.now();
    let mut record = WatchRecord {
        id,
        prefix: shared.key(""),
        start,
        opened,
        closed: opened,
        bookmarks,
        refused: None,
        events: Vec::new(),
        cut: false,
    };
    let sent = tokio::time::timeout(REQUEST_TIMEOUT, endpoint.client.get(&url).send()).await;
    let Ok(Ok(mut response)) = sent else {
        shared.unopened.fetch_add(1, Ordering::Relaxed);
        return None;
    };
    let status = response.status().as_u16();
    if status != 200 {
        record.refused = Some(status);
        record.closed = shared.now();
        return Some(record);
    }
    // The server ends the watch after `timeoutSeconds`; the recorder stops reading a little
    // later at the latest, or when the run stops.
    let deadline = tokio::time::Instant::now() + read_for + Duration::from_secs(2);
    let mut stop = shared.stop.subscribe();
    let mut buffer = Vec::new();
    loop {
        let chunk = tokio::select! {
            chunk = response.chunk() => chunk,
            _ = tokio::time::sleep_until(deadline) => {
                record.cut = true;
                break;
            }
            _ = stop.wait_for(|stopped| *stopped) => {
                record.cut = true;
                break;
            }
        };
        let Ok(Some(chunk)) = chunk else {
            break;
        };
        buffer.extend_from_slice(&chunk);
        while let Some(end) = buffer.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            match watch_event(shared, &line) {
                Some(event) => {
                    match &event {
                        WatchEvent::Change { rv, .. } => shared.saw(*rv),
                        WatchEvent::Bookmark { rv, .. } => {
                            shared.saw(*rv);
                            lock(&shared.bookmarks).push(*rv);
                        }
                        WatchEvent::Error { .. } => {}
                    }
                    record.events.push(event);
                }
                None => shared.unexpected(format!(
                    "watch {id} ({url}) delivered {}",
                    String::from_utf8_lossy(&line)
                )),
            }
        }
    }
    record.closed = shared.now();
    Some(record)
}

/// One watcher: watches one after another, each from a random start, until the run stops.
pub(super) async fn run_watcher(shared: Arc<Shared>, watcher: usize, mut rng: Rng) {
    let mut first = true;
    while !shared.stopped() {
        let id = shared.next_watch.fetch_add(1, Ordering::Relaxed);
        let endpoint = shared
            .targets
            .get(watcher + rng.below(shared.targets.len() as u64) as usize);
        let recent = |rng: &mut Rng| {
            let seen = lock(&shared.seen);
            let n = seen.len() as u64;
            (n > 0).then(|| seen[(n - 1 - rng.below(n.min(20))) as usize])
        };
        // Each watcher's first watch starts differently, so every kind of start is in every
        // run; later ones start at random.
        let pick = if first {
            [7, 0, 2, 4, 9, 8][watcher % 6]
        } else {
            rng.below(12)
        };
        first = false;
        let (start, bookmarks) = match pick {
            0 | 1 => (WatchStart::Unset, rng.below(2) == 0),
            2 | 3 => (WatchStart::Zero, rng.below(2) == 0),
            // Resume from any resourceVersion delivered or returned so far.
            4..=6 => match shared.seen_rv(&mut rng) {
                Some(rv) => (WatchStart::From(rv), rng.below(2) == 0),
                None => (WatchStart::Unset, true),
            },
            7 => (WatchStart::InitialEvents(None), true),
            8 => (WatchStart::InitialEvents(recent(&mut rng)), true),
            // Resume after a bookmark (a recent one), as a reflector does.
            9 | 10 => {
                let bookmark = {
                    let marks = lock(&shared.bookmarks);
                    let n = marks.len() as u64;
                    (n > 0).then(|| marks[(n - 1 - rng.below(n.min(5))) as usize])
                };
                match bookmark.or_else(|| recent(&mut rng)) {
                    Some(rv) => (WatchStart::From(rv), true),
                    None => (WatchStart::Unset, true),
                }
            }
            _ => match recent(&mut rng) {
                Some(rv) => (WatchStart::From(rv), true),
                None => (WatchStart::Zero, true),
            },
        };
        // Watches that allow bookmarks are read for longer: the watch cache sends one every
        // 5 s.
        let mut read_for = Duration::from_secs(1) + rng.duration(shared.config.watch_for);
        if bookmarks {
            read_for += rng.duration(shared.config.watch_for);
        }
        match watch_once(&shared, id, &endpoint, start, bookmarks, read_for).await {
            Some(record) => lock(&shared.watches).push(record),
            None => tokio::time::sleep(BACKOFF).await,
        }
        tokio::time::sleep(rng.duration(Duration::from_millis(300))).await;
    }
}

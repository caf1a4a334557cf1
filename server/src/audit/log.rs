//! The log backend (`--audit-log-path`): events go through a bounded queue to one writer
//! thread, which writes them in batches (everything queued, up to [`MAX_BATCH`] events, per
//! write) and flushes after each batch. A full queue never blocks a request: the event is
//! dropped and counted in `apiserver_audit_error_total{plugin="log"}`, as Kubernetes' batch
//! mode does. The queue is full at [`BUFFER_SIZE`] events or [`MAX_QUEUED_BYTES`] of recorded
//! bodies, whichever comes first, so a log that is not being written (a full disk, a pipe no
//! one reads) holds a bounded amount of memory. The file rotates like Kubernetes' (lumberjack): before a line would take it past
//! `--audit-log-maxsize` megabytes it is renamed to `<name>-<UTC timestamp>.<ext>`, and old
//! backups beyond `--audit-log-maxbackup` or older than `--audit-log-maxage` days are removed.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::time::{Duration, SystemTime};

use prometheus_client::metrics::counter::Counter;

use super::event::Event;

/// Events queued for the writer before new ones are dropped (Kubernetes' default
/// `--audit-log-batch-buffer-size`).
pub const BUFFER_SIZE: usize = 10_000;
/// The most bytes of recorded request and response bodies queued for the writer: without it
/// 10,000 events of 1 MB bodies held 10 GB while the log was not being written.
pub const MAX_QUEUED_BYTES: usize = 64 * 1024 * 1024;
/// The most events written in one batch (Kubernetes' default `--audit-log-batch-max-size` for
/// the webhook backend; the log backend writes whatever is queued, up to this many).
pub const MAX_BATCH: usize = 400;
/// lumberjack's size limit when `--audit-log-maxsize` is 0.
const DEFAULT_MAX_SIZE_MB: u64 = 100;
/// lumberjack's backup timestamp format (`2006-01-02T15-04-05.000`).
const BACKUP_TIME_FORMAT: &str = "%Y-%m-%dT%H-%M-%S%.3f";

/// Where and how the log is written.
#[derive(Clone, Debug)]
pub struct LogOptions {
    /// The file, or `-` for standard output.
    pub path: PathBuf,
    /// Rotate before the file exceeds this many megabytes (0: 100, lumberjack's default).
    pub max_size_mb: u64,
    /// Keep at most this many rotated files (0: all).
    pub max_backups: usize,
    /// Remove rotated files older than this many days (0: never).
    pub max_age_days: u64,
}

/// The counters of the backend.
#[derive(Clone, Debug, Default)]
pub struct LogCounters {
    /// Events handed to the backend (`apiserver_audit_event_total`).
    pub events: Counter,
    /// Events dropped or not written (`apiserver_audit_error_total{plugin="log"}`).
    pub errors: Counter,
}

/// What the writer thread receives.
#[derive(Debug)]
enum Message {
    /// An event to write, and the bytes of its recorded bodies.
    Event(Box<Event>, usize),
    /// A request to answer once everything queued before it is written and flushed.
    Flush(SyncSender<()>),
}

/// The sending side of the log: cheap to clone and to call from request handling.
#[derive(Clone, Debug)]
pub struct AuditLog {
    queue: SyncSender<Message>,
    counters: LogCounters,
    /// The bytes of the recorded bodies of the events queued.
    queued_bytes: Arc<AtomicUsize>,
}

impl AuditLog {
    /// Opens the log and starts its writer thread.
    pub fn start(options: LogOptions, counters: LogCounters) -> std::io::Result<Self> {
        let mut out = Output::open(&options)?;
        let (queue, rx) = sync_channel(BUFFER_SIZE);
        let errors = counters.errors.clone();
        let queued_bytes = Arc::new(AtomicUsize::new(0));
        let written = Arc::clone(&queued_bytes);
        std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || write_loop(&rx, &mut out, &errors, &written))?;
        Ok(Self {
            queue,
            counters,
            queued_bytes,
        })
    }

    /// Queues an event; when the queue is full the event is dropped and counted.
    pub fn process(&self, event: Event) {
        self.counters.events.inc();
        let size = [&event.request_object, &event.response_object]
            .into_iter()
            .flatten()
            .map(|body| body.bytes.len())
            .sum::<usize>();
        let before = self.queued_bytes.fetch_add(size, Ordering::AcqRel);
        let sent = if before + size > MAX_QUEUED_BYTES && before > 0 {
            Err(())
        } else {
            self.queue
                .try_send(Message::Event(Box::new(event), size))
                .map_err(|_| ())
        };
        if sent.is_err() {
            self.queued_bytes.fetch_sub(size, Ordering::AcqRel);
            self.counters.errors.inc();
            tracing::warn!("audit log queue is full: event dropped");
        }
    }

    /// Waits (at most `timeout`, on the calling thread) until the events queued so far are
    /// written and flushed; the server calls it when it stops.
    pub fn flush(&self, timeout: std::time::Duration) -> bool {
        let (done, wait) = sync_channel(1);
        let deadline = std::time::Instant::now() + timeout;
        let mut message = Message::Flush(done);
        loop {
            match self.queue.try_send(message) {
                Ok(()) => break,
                Err(TrySendError::Full(m)) if std::time::Instant::now() < deadline => {
                    message = m;
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(_) => return false,
            }
        }
        wait.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
            .is_ok()
    }
}

fn write_loop(rx: &Receiver<Message>, out: &mut Output, errors: &Counter, queued: &AtomicUsize) {
    let mut line = Vec::with_capacity(4096);
    while let Ok(first) = rx.recv() {
        let mut next = Some(first);
        let mut n = 0;
        let mut waiting = Vec::new();
        while let Some(message) = next.take() {
            match message {
                Message::Event(event, size) => {
                    line.clear();
                    event.write_line(&mut line);
                    drop(event);
                    queued.fetch_sub(size, Ordering::AcqRel);
                    if let Err(e) = out.write_line(&line) {
                        errors.inc();
                        tracing::warn!(error = %e, "writing the audit log failed");
                    }
                }
                Message::Flush(done) => waiting.push(done),
            }
            n += 1;
            if n < MAX_BATCH {
                next = rx.try_recv().ok();
            }
        }
        if let Err(e) = out.flush() {
            tracing::warn!(error = %e, "flushing the audit log failed");
        }
        for done in waiting {
            let _ = done.send(());
        }
    }
}

enum Output {
    Stdout(std::io::BufWriter<std::io::Stdout>),
    File(RotatingFile),
}

impl Output {
    fn open(options: &LogOptions) -> std::io::Result<Self> {
        if options.path.as_os_str() == "-" {
            return Ok(Output::Stdout(std::io::BufWriter::new(std::io::stdout())));
        }
        Ok(Output::File(RotatingFile::open(options)?))
    }

    fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        match self {
            Output::Stdout(w) => w.write_all(line),
            Output::File(f) => f.write_line(line),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Output::Stdout(w) => w.flush(),
            Output::File(f) => f.flush(),
        }
    }
}

/// A file that rotates by size, as lumberjack does.
pub struct RotatingFile {
    path: PathBuf,
    max_size: u64,
    max_backups: usize,
    max_age: Option<Duration>,
    file: std::io::BufWriter<File>,
    size: u64,
}

fn open_append(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

impl RotatingFile {
    /// Opens (appending) or creates the file and its directory.
    pub fn open(options: &LogOptions) -> std::io::Result<Self> {
        if let Some(dir) = options.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = open_append(&options.path)?;
        let size = file.metadata()?.len();
        let mb = if options.max_size_mb == 0 {
            DEFAULT_MAX_SIZE_MB
        } else {
            options.max_size_mb
        };
        Ok(Self {
            path: options.path.clone(),
            max_size: mb * 1024 * 1024,
            max_backups: options.max_backups,
            max_age: (options.max_age_days > 0)
                .then(|| Duration::from_secs(options.max_age_days * 24 * 3600)),
            file: std::io::BufWriter::with_capacity(64 * 1024, file),
            size,
        })
    }

    /// Writes one line, rotating first when it would take the file past its limit.
    pub fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        let len = line.len() as u64;
        if len > self.max_size {
            return Err(std::io::Error::other(format!(
                "write length {len} exceeds maximum file size {}",
                self.max_size
            )));
        }
        if self.size + len > self.max_size {
            self.rotate()?;
        }
        self.file.write_all(line)?;
        self.size += len;
        Ok(())
    }

    /// Writes buffered lines to the file.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }

    /// The prefix and extension of backup names: `audit` and `.log` for `audit.log`.
    fn name_parts(&self) -> (String, String) {
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match name.rfind('.') {
            Some(i) if i > 0 => (format!("{}-", &name[..i]), name[i..].to_string()),
            _ => (format!("{name}-"), String::new()),
        }
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        self.file.flush()?;
        let (prefix, ext) = self.name_parts();
        let stamp = chrono::Utc::now().format(BACKUP_TIME_FORMAT);
        let backup = self.path.with_file_name(format!("{prefix}{stamp}{ext}"));
        std::fs::rename(&self.path, &backup)?;
        self.file = std::io::BufWriter::with_capacity(64 * 1024, open_append(&self.path)?);
        self.size = 0;
        self.remove_old_backups(&prefix, &ext);
        Ok(())
    }

    /// Removes backups beyond the count limit (oldest first) and older than the age limit.
    fn remove_old_backups(&self, prefix: &str, ext: &str) {
        if self.max_backups == 0 && self.max_age.is_none() {
            return;
        }
        let dir = match self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(d) => d.to_path_buf(),
            None => PathBuf::from("."),
        };
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return;
        };
        let mut backups: Vec<(chrono::NaiveDateTime, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let stamp = name.strip_prefix(prefix)?.strip_suffix(ext)?;
                let t = chrono::NaiveDateTime::parse_from_str(stamp, BACKUP_TIME_FORMAT).ok()?;
                Some((t, e.path()))
            })
            .collect();
        backups.sort_by_key(|b| std::cmp::Reverse(b.0));
        let cutoff = self
            .max_age
            .map(|age| chrono::DateTime::<chrono::Utc>::from(SystemTime::now() - age).naive_utc());
        for (i, (t, path)) in backups.iter().enumerate() {
            let too_many = self.max_backups > 0 && i >= self.max_backups;
            let too_old = cutoff.is_some_and(|c| *t < c);
            if (too_many || too_old)
                && let Err(e) = std::fs::remove_file(path)
            {
                tracing::warn!(file = %path.display(), error = %e, "removing an old audit log failed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_backups_are_removed_by_age() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("audit.json");
        let old = dir.path().join("audit-2001-02-03T04-05-06.789.json");
        let other = dir.path().join("other-2001-02-03T04-05-06.789.json");
        for p in [&old, &other] {
            std::fs::write(p, b"{}\n").unwrap_or_else(|e| panic!("{e}"));
        }
        let mut f = RotatingFile::open(&LogOptions {
            path: path.clone(),
            max_size_mb: 1,
            max_backups: 0,
            max_age_days: 30,
        })
        .unwrap_or_else(|e| panic!("{e}"));
        let line = vec![b'x'; 600 * 1024];
        for _ in 0..2 {
            f.write_line(&line).unwrap_or_else(|e| panic!("{e}"));
        }
        f.flush().unwrap_or_else(|e| panic!("{e}"));
        assert!(!old.exists(), "a backup older than 30 days is removed");
        assert!(other.exists(), "files of another log are kept");
        let backups = std::fs::read_dir(dir.path())
            .unwrap_or_else(|e| panic!("{e}"))
            .filter_map(Result::ok)
            .filter(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.starts_with("audit-") && n.ends_with(".json")
            })
            .count();
        assert_eq!(backups, 1, "the fresh backup stays");
    }

    #[test]
    fn flush_waits_for_queued_events() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("audit.log");
        let log = AuditLog::start(
            LogOptions {
                path: path.clone(),
                max_size_mb: 0,
                max_backups: 0,
                max_age_days: 0,
            },
            LogCounters::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let event = event();
        for _ in 0..1000 {
            log.process(event.clone());
        }
        assert!(log.flush(Duration::from_secs(30)));
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(text.lines().count(), 1000);
        assert_eq!(log.counters.events.get(), 1000);
        assert_eq!(log.counters.errors.get(), 0);
    }

    #[test]
    fn a_log_not_being_written_queues_a_bounded_number_of_body_bytes() {
        // No writer: everything queued stays queued.
        let (queue, _rx) = sync_channel(BUFFER_SIZE);
        let log = AuditLog {
            queue,
            counters: LogCounters::default(),
            queued_bytes: Arc::new(AtomicUsize::new(0)),
        };
        let mut big = event();
        big.request_object = Some(super::super::event::RecordedBody::plain(
            bytes::Bytes::from(vec![b'x'; 1 << 20]),
            super::super::event::BodyFormat::Json,
        ));
        for _ in 0..100 {
            log.process(big.clone());
        }
        assert_eq!(log.counters.events.get(), 100);
        assert_eq!(
            log.counters.errors.get(),
            100 - (MAX_QUEUED_BYTES >> 20) as u64
        );
        assert_eq!(log.queued_bytes.load(Ordering::Acquire), MAX_QUEUED_BYTES);
        // Events without bodies still fit while the count allows.
        log.process(event());
        assert_eq!(
            log.counters.errors.get(),
            100 - (MAX_QUEUED_BYTES >> 20) as u64
        );
    }

    fn event() -> Event {
        Event {
            level: super::super::policy::Level::Metadata,
            audit_id: "a".into(),
            stage: super::super::policy::Stage::ResponseComplete,
            request_uri: "/".into(),
            verb: "get".into(),
            user: None,
            impersonated_user: None,
            source_ips: Vec::new(),
            user_agent: String::new(),
            object_ref: None,
            response_status: None,
            request_object: None,
            response_object: None,
            request_received: chrono::Utc::now(),
            stage_timestamp: chrono::Utc::now(),
            annotations: std::collections::BTreeMap::new(),
            omit_managed_fields: false,
        }
    }

    #[test]
    fn rotates_by_size_and_keeps_max_backups() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("logs").join("audit.log");
        let mut f = RotatingFile::open(&LogOptions {
            path: path.clone(),
            max_size_mb: 1,
            max_backups: 2,
            max_age_days: 0,
        })
        .unwrap_or_else(|e| panic!("{e}"));
        let line = vec![b'x'; 300 * 1024];
        for _ in 0..14 {
            f.write_line(&line).unwrap_or_else(|e| panic!("{e}"));
            // Distinct timestamps for the backups.
            std::thread::sleep(Duration::from_millis(2));
        }
        f.flush().unwrap_or_else(|e| panic!("{e}"));
        let mut names: Vec<String> = std::fs::read_dir(path.parent().unwrap_or(dir.path()))
            .unwrap_or_else(|e| panic!("{e}"))
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names.len(), 3, "{names:?}");
        assert_eq!(names.last().map(String::as_str), Some("audit.log"));
        for backup in &names[..2] {
            assert!(
                backup.starts_with("audit-") && backup.ends_with(".log"),
                "{backup}"
            );
            let len = std::fs::metadata(path.with_file_name(backup))
                .map(|m| m.len())
                .unwrap_or_default();
            assert_eq!(len, 3 * 300 * 1024, "{backup}");
        }
        let current = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        assert_eq!(current, 2 * 300 * 1024);
        assert!(
            f.write_line(&vec![b'y'; 2 * 1024 * 1024]).is_err(),
            "a line larger than the limit is refused"
        );
    }
}

//! Streaming one table (`hlodump.scan`): batches in file order while later files parse, in
//! memory that does not grow with the input.
//!
//! The inputs are planned into groups exactly as `read::read` plans them. Each group gets a
//! bounded channel; `threads` workers claim groups in increasing order and parse them with a
//! table set whose `Stream` sends the streamed table to the group's channel whenever it holds
//! `batch_rows` complete rows (`Tables::line_end`). The consumer drains the channels in group
//! order. Why this cannot deadlock and stays bounded:
//!
//! * workers claim groups in order, so the group the consumer waits for has been claimed by a
//!   worker that is not blocked on any other group (a worker holds one group at a time);
//! * a worker ahead of the consumer blocks once its group's channel holds `CHANNEL_BATCHES`
//!   batches: at most `threads` groups are in flight, each with a few batches and the input
//!   window it parses.
//!
//! A streaming read parses each file on one thread (no intra-file chunks: a chunk's rows could
//! only be sent once every chunk before it had been checked, see `split.rs`); parallelism comes
//! from parsing several files at once. Errors: in strict mode the first error ends the stream
//! (the consumer gets it in file order); in collect mode `errors` rows are kept and handed out
//! with `BatchStream::errors` (nothing is dropped in silence).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arrow_array::RecordBatch;

use crate::error::{Error, Result};
use crate::read::{input_sizes, plan, read_group, Input, Options};
use crate::runtime::{self, Abort, Stop};
use crate::tables::{Stream, TABLE_NAMES};

/// Batches a group may have parsed ahead of the consumer.
const CHANNEL_BATCHES: usize = 2;

/// What to stream: one table and the batch size (its projection is `Options::projection`).
#[derive(Clone, Debug)]
pub struct StreamSpec {
    /// Index into `TABLE_NAMES`.
    pub table: usize,
    /// Rows per batch (at most; a batch may end early at the end of a group of files).
    pub batch_rows: usize,
}

enum Msg {
    Batch(RecordBatch),
    /// The group's `errors` rows (collect mode).
    Errors(RecordBatch),
    /// The group is done.
    Done,
    /// The group failed: strict-mode parse error, I/O error, or a stop.
    Failed(Failure),
}

/// Why a stream ended early.
#[derive(Debug)]
pub enum Failure {
    Error(Error),
    Stop(Stop),
    /// A panic in a worker (a bug): its message.
    Panic(String),
}

/// One poll of the stream.
pub enum Poll {
    Batch(RecordBatch),
    End,
    /// Nothing yet (the caller may check for Ctrl-C and poll again).
    Pending,
    Failed(Failure),
}

/// The consumer's end of a streaming read.
pub struct BatchStream {
    receivers: Vec<Receiver<Msg>>,
    next_group: usize,
    errors: Vec<RecordBatch>,
    abort: Arc<Abort>,
    finished: bool,
}

/// Start streaming `spec.table` of `inputs` (workers start at once).
pub fn stream(inputs: Vec<Input>, opts: Options, spec: StreamSpec, abort: Arc<Abort>) -> Result<BatchStream> {
    let workers = runtime::validate_threads(opts.threads)
        .map_err(|m| Error::Io { path: String::new(), source: std::io::Error::new(std::io::ErrorKind::InvalidInput, m) })?;
    let sizes = input_sizes(&inputs);
    let groups = plan(&sizes, opts.map, workers);
    let (senders, receivers): (Vec<SyncSender<Msg>>, Vec<Receiver<Msg>>) =
        groups.iter().map(|_| sync_channel(CHANNEL_BATCHES)).unzip();
    let opts = Options { split: false, ..opts };
    let shared = Arc::new(Shared {
        inputs,
        sizes,
        groups,
        senders: Mutex::new(senders.into_iter().map(Some).collect()),
        next: AtomicUsize::new(0),
        opts,
        spec,
    });
    for k in 0..workers.min(shared.groups.len()) {
        let shared = shared.clone();
        let abort = abort.clone();
        std::thread::Builder::new()
            .name(format!("hlodump-scan-{k}"))
            .spawn(move || worker(&shared, abort))
            .map_err(|source| Error::Io { path: String::new(), source })?;
    }
    Ok(BatchStream { receivers, next_group: 0, errors: Vec::new(), abort, finished: false })
}

struct Shared {
    inputs: Vec<Input>,
    sizes: Vec<Option<u64>>,
    groups: Vec<crate::read::Group>,
    senders: Mutex<Vec<Option<SyncSender<Msg>>>>,
    next: AtomicUsize,
    opts: Options,
    spec: StreamSpec,
}

fn worker(shared: &Shared, abort: Arc<Abort>) {
    runtime::set_current(Some(abort.clone()));
    loop {
        let g = shared.next.fetch_add(1, Ordering::SeqCst);
        if g >= shared.groups.len() || abort.stopped().is_some() {
            break;
        }
        let tx = shared.senders.lock().unwrap_or_else(|e| e.into_inner())[g].take().expect("each group is claimed once");
        let msg = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| stream_group(shared, g, &tx, &abort))) {
            Ok(Ok(())) => Msg::Done,
            Ok(Err(e)) => Msg::Failed(Failure::Error(e)),
            Err(payload) => match runtime::stop_of(&*payload, Some(&abort)) {
                Some(stop) => Msg::Failed(Failure::Stop(stop)),
                None => Msg::Failed(Failure::Panic(runtime::panic_text(&*payload))),
            },
        };
        if tx.send(msg).is_err() {
            break; // the consumer is gone
        }
    }
    runtime::set_current(None);
}

/// Parse group `g`, sending its batches (and its `errors` rows) to `tx`.
fn stream_group(shared: &Shared, g: usize, tx: &SyncSender<Msg>, abort: &Arc<Abort>) -> Result<()> {
    let spec = &shared.spec;
    let mut t = shared.opts.tables();
    let sink_tx = tx.clone();
    let sink_abort = abort.clone();
    t.set_stream(Stream {
        table: spec.table,
        batch_rows: spec.batch_rows.max(1),
        sink: Box::new(move |batch| {
            if sink_tx.send(Msg::Batch(batch)).is_err() {
                // the consumer dropped the stream: stop every worker at its next check
                sink_abort.cancel();
                runtime::check();
            }
            Ok(())
        }),
    });
    let done = read_group(&shared.inputs, &shared.sizes, &shared.groups[g], &shared.opts, t)?;
    let errors = TABLE_NAMES.iter().position(|&n| n == "errors").expect("errors table");
    for set in done {
        // the streamed table was sent batch by batch; keep the errors of the other tables
        if spec.table != errors {
            let (_, b) = &set[errors];
            if b.num_rows() > 0 && tx.send(Msg::Errors(b.clone())).is_err() {
                abort.cancel();
            }
        }
    }
    Ok(())
}

impl BatchStream {
    /// The next batch, waiting at most `wait`.
    pub fn poll(&mut self, wait: Duration) -> Poll {
        loop {
            if self.finished {
                return Poll::End;
            }
            let Some(rx) = self.receivers.get(self.next_group) else {
                self.finished = true;
                return Poll::End;
            };
            match rx.recv_timeout(wait) {
                Ok(Msg::Batch(b)) => return Poll::Batch(b),
                Ok(Msg::Errors(b)) => self.errors.push(b),
                Ok(Msg::Done) => self.next_group += 1,
                Ok(Msg::Failed(f)) => {
                    self.finish();
                    return Poll::Failed(f);
                }
                Err(RecvTimeoutError::Timeout) => return Poll::Pending,
                Err(RecvTimeoutError::Disconnected) => {
                    self.finish();
                    return Poll::Failed(Failure::Panic("a scan worker ended without a result".into()));
                }
            }
        }
    }

    /// The `errors` rows met so far (collect mode; files before the current one).
    pub fn errors(&self) -> &[RecordBatch] {
        &self.errors
    }

    /// Stop the workers (Ctrl-C, or the consumer is done early).
    pub fn cancel(&mut self) {
        self.abort.cancel();
        self.finish();
    }

    fn finish(&mut self) {
        self.finished = true;
        self.abort.cancel();
        self.receivers.clear(); // senders fail from now on: blocked workers wake and stop
    }
}

impl Drop for BatchStream {
    fn drop(&mut self) {
        self.finish();
    }
}

impl Iterator for BatchStream {
    type Item = std::result::Result<RecordBatch, Failure>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.poll(Duration::from_secs(3600)) {
                Poll::Batch(b) => return Some(Ok(b)),
                Poll::End => return None,
                Poll::Pending => continue,
                Poll::Failed(f) => return Some(Err(f)),
            }
        }
    }
}

//! The backfill shape: batches appended under one lock, filled blocks
//! compressed by a pool of worker threads and committed in order.

use std::collections::BTreeMap;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::error::{Error, Result};
use crate::event::EventRef;
use crate::frame::Compressor;
use crate::writer::{CompressedBlock, PreparedBlock, Writer};

/// A writer driven in the backfill shape. With 0 workers blocks are
/// compressed inline (the `sync` shape); with N, by N threads.
#[derive(Debug)]
pub struct Backfill {
    writer: Writer,
    inline: Option<Compressor>,
    pool: Pool,
    done: Option<Receiver<Result<CompressedBlock>>>,
    waiting: BTreeMap<u64, CompressedBlock>,
    in_flight: usize,
    max_in_flight: usize,
}

impl Backfill {
    /// Wraps `writer`; `workers` compression threads (0 = inline).
    pub fn new(writer: Writer, workers: usize) -> Result<Self> {
        let mut b = Backfill {
            writer,
            inline: None,
            pool: Pool::default(),
            done: None,
            waiting: BTreeMap::new(),
            in_flight: 0,
            max_in_flight: 2 * workers.max(1),
        };
        if workers == 0 {
            b.inline = Some(Compressor::new()?);
            return Ok(b);
        }
        let (job_tx, job_rx) = mpsc::channel::<PreparedBlock>();
        let (done_tx, done_rx) = mpsc::channel();
        let job_rx = Arc::new(Mutex::new(job_rx));
        for _ in 0..workers {
            let mut zc = Compressor::new()?;
            let rx = Arc::clone(&job_rx);
            let tx = done_tx.clone();
            b.pool.workers.push(std::thread::spawn(move || {
                loop {
                    let job = match rx.lock() {
                        Ok(guard) => guard.recv(),
                        Err(_) => return,
                    };
                    let Ok(job) = job else { return };
                    if tx.send(job.compress(&mut zc)).is_err() {
                        return;
                    }
                }
            }));
        }
        b.pool.jobs = Some(job_tx);
        b.done = Some(done_rx);
        Ok(b)
    }

    /// Appends a batch; every block it fills is compressed and committed
    /// in order (possibly after the call returns, when workers are used).
    pub fn append_batch(&mut self, events: &[EventRef<'_>]) -> Result<()> {
        for e in events {
            if self.writer.append(e)? {
                self.dispatch()?;
            }
        }
        Ok(())
    }

    fn dispatch(&mut self) -> Result<()> {
        let Some(prepared) = self.writer.prepare()? else {
            return Ok(());
        };
        if let Some(zc) = &mut self.inline {
            let c = prepared.compress(zc).map_err(|e| self.writer.poison(e))?;
            return self.writer.commit(c);
        }
        while self.in_flight >= self.max_in_flight {
            self.receive(true)?;
        }
        let sent = self
            .pool
            .jobs
            .as_ref()
            .is_some_and(|tx| tx.send(prepared).is_ok());
        if !sent {
            return Err(self.writer.poison(Error::WorkerGone));
        }
        self.in_flight += 1;
        while self.receive(false)? {}
        Ok(())
    }

    /// Takes one finished block (waiting for it when `block`), then commits
    /// every block that is next in order. Returns whether one arrived.
    fn receive(&mut self, block: bool) -> Result<bool> {
        let Some(rx) = &self.done else {
            return Ok(false);
        };
        let got = if block {
            rx.recv().map_err(|_| Error::WorkerGone).map(Some)
        } else {
            match rx.try_recv() {
                Ok(v) => Ok(Some(v)),
                Err(mpsc::TryRecvError::Empty) => Ok(None),
                Err(mpsc::TryRecvError::Disconnected) => Err(Error::WorkerGone),
            }
        };
        let got = got.map_err(|e| self.writer.poison(e))?;
        let Some(result) = got else {
            return Ok(false);
        };
        self.in_flight -= 1;
        let block = result.map_err(|e| self.writer.poison(e))?;
        self.waiting.insert(block.ticket(), block);
        while let Some(entry) = self.waiting.first_entry() {
            let expected = self.writer.committed_tickets();
            if *entry.key() != expected {
                break;
            }
            let b = entry.remove();
            self.writer.commit(b)?;
        }
        Ok(true)
    }

    /// Waits until every block handed to the workers is committed (the
    /// pending partial block stays pending).
    pub fn drain(&mut self) -> Result<()> {
        while self.in_flight > 0 {
            self.receive(true)?;
        }
        Ok(())
    }

    /// Dispatches the partial block and waits until every block is committed.
    pub fn sync(&mut self) -> Result<()> {
        self.dispatch()?;
        self.drain()
    }

    /// Syncs, stops the workers and hands back the writer.
    pub fn finish(mut self) -> Result<Writer> {
        self.sync()?;
        self.pool.stop();
        Ok(self.writer)
    }

    /// The wrapped writer.
    pub fn writer(&self) -> &Writer {
        &self.writer
    }
}

/// The worker threads; stopped (and joined) when dropped.
#[derive(Debug, Default)]
struct Pool {
    jobs: Option<Sender<PreparedBlock>>,
    workers: Vec<JoinHandle<()>>,
}

impl Pool {
    fn stop(&mut self) {
        self.jobs = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.stop();
    }
}

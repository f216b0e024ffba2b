//! One way to wait: every call that blocks until something happens sleeps here.
//!
//! A waiting call — `fugue_exec`'s wait, `fugue_wait`, `fugue_expect`, a pipeline, a durable
//! call's grace — is a loop of the same steps: look at what it waits for and answer if it is there;
//! otherwise sleep until one of the channels that announce a change speaks (a pane's output, its
//! end, a live shell's records: `Watch` subscriptions), the next look it has due (the input
//! watch's next `/proc` look, a prompt's mark given up on), the progress heartbeat, the call's
//! cancel channel or its deadline. `Waiter` holds those and sleeps on them in one `Select`;
//! `Waiter::drive` is that loop, written once: the caller gives its run and its look (which
//! answers `Look`), and gets back the look's answer, or the deadline or the cancel that ended the
//! wait first. A run whose caller wants progress is driven by `Waiter::drive_reporting`: the
//! run says where it stands (`Progressing`: a `Standing`) and the waiter alone tells the call's
//! progress (`Reports`) at each heartbeat, and at once of what a look found worth telling. A leaf:
//! it knows channels and instants, not panes or calls.

use crossbeam_channel::{Receiver, Select, TryRecvError, never};
use std::time::{Duration, Instant};

/// Why a sleep ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Woke {
    /// A channel spoke or the look the caller had due is due: look again.
    Look,
    /// The progress heartbeat ticked: report, then look again.
    Heartbeat,
    /// The deadline passed.
    Deadline,
    /// The call was cancelled.
    Cancelled,
}

/// What one look of a waiting call found.
pub(crate) enum Look<T> {
    /// The wait is over: its answer.
    Done(T),
    /// Nothing yet: sleep on the waiter's channels until one speaks or the look given is due.
    Again(Option<Instant>),
    /// Nothing yet: sleep as `Again` does, on these channels instead of the waiter's own (a call
    /// whose set of channels changes between looks: `fugue_wait` stops listening to a pane that
    /// has its outcome).
    AgainOn(Option<Instant>, Vec<Receiver<()>>),
    /// Let what comes gather until this instant, woken only by the cancel and the deadline, then
    /// look again (`fugue_expect` over a flood of output).
    Pause(Instant),
}

/// How a driven wait ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Drove<T> {
    /// A look answered.
    Done(T),
    /// The deadline passed first.
    Deadline,
    /// The call was cancelled first.
    Cancelled,
}

/// What a run says of its progress: how far it is of how far it goes, and a line for people.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Standing {
    pub(crate) done: f64,
    pub(crate) total: Option<f64>,
    pub(crate) message: String,
}

impl Standing {
    /// A wait that measures its progress in time: the seconds since `started` of `total`.
    pub(crate) fn waited(started: Instant, total: Duration, message: String) -> Standing {
        Standing {
            done: started.elapsed().as_secs_f64(),
            total: Some(total.as_secs_f64()),
            message,
        }
    }
}

/// A wait whose progress is only the time it has waited of `total`, and what it waits for.
pub(crate) struct TimedWait {
    pub(crate) started: Instant,
    pub(crate) total: Duration,
    pub(crate) what: &'static str,
}

impl Progressing for TimedWait {
    fn progress(&self) -> Standing {
        Standing::waited(self.started, self.total, self.what.to_string())
    }
}

/// A run that says where it stands, for its call's progress.
pub(crate) trait Progressing {
    /// Where the run stands now: what each heartbeat reports.
    fn progress(&self) -> Standing;

    /// What the last look found worth telling at once rather than at the next heartbeat (a step
    /// typed or ended, a command finished), oldest first; taken, so each is told once.
    fn news(&mut self) -> Vec<Standing> {
        Vec::new()
    }
}

/// Where a call's progress goes (the call's `Progress`), when its client asked for it.
pub(crate) trait Reports {
    /// Whether the client wants progress: a run's words are put together only then.
    fn wanted(&self) -> bool;
    /// Ticks when progress is due while it is wanted, and never otherwise.
    fn heartbeat(&self) -> Receiver<Instant>;
    fn tell(&self, said: &Standing);
}

/// What one waiting call sleeps on.
pub(crate) struct Waiter {
    /// Channels that announce a change: any of them wakes the sleep to look again.
    wakes: Vec<Receiver<()>>,
    /// Disconnects when the call is cancelled.
    cancel: Receiver<()>,
    heartbeat: Receiver<Instant>,
    deadline: Option<Instant>,
}

impl Default for Waiter {
    fn default() -> Waiter {
        Waiter { wakes: Vec::new(), cancel: never(), heartbeat: never(), deadline: None }
    }
}

impl Waiter {
    /// A waiter that no cancel ends (`cancel` adds one) and that has no deadline (`until`).
    pub(crate) fn new() -> Waiter {
        Waiter::default()
    }

    /// Ends sleeps with `Woke::Cancelled` once `cancel` disconnects.
    pub(crate) fn cancel(mut self, cancel: &Receiver<()>) -> Waiter {
        self.cancel = cancel.clone();
        self
    }

    /// Ends sleeps with `Woke::Deadline` once `deadline` has passed.
    pub(crate) fn until(mut self, deadline: Instant) -> Waiter {
        self.deadline = Some(deadline);
        self
    }

    /// Wakes sleeps with `Woke::Look` whenever `wake` speaks.
    pub(crate) fn on(mut self, wake: Receiver<()>) -> Waiter {
        self.wakes.push(wake);
        self
    }

    /// Adds `wake` to a waiter already in use (a subscription made only while it is needed).
    pub(crate) fn add(&mut self, wake: Receiver<()>) {
        self.wakes.push(wake);
    }

    /// Moves the deadline, as a call that interrupts its work and gives it a grace does; `None`
    /// takes it away.
    pub(crate) fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
    }

    /// The wait loop: looks at `run`, and sleeps as the look says, until a look answers, the
    /// deadline passes or the call is cancelled.
    pub(crate) fn drive<S, T>(
        &mut self,
        run: &mut S,
        look: impl FnMut(&mut S) -> Look<T>,
    ) -> Drove<T> {
        self.heartbeat = never();
        self.drive_telling(run, look, |_, _| {})
    }

    /// The wait loop of a run whose call may want progress: as `drive`, and while `to` wants it,
    /// tells `to` where the run stands at each heartbeat, and after each look the news it found.
    /// The one place a waiting tool reports its progress.
    pub(crate) fn drive_reporting<S: Progressing, T>(
        &mut self,
        run: &mut S,
        look: impl FnMut(&mut S) -> Look<T>,
        to: &impl Reports,
    ) -> Drove<T> {
        self.heartbeat = to.heartbeat();
        let tell = |run: &mut S, beat: bool| {
            let news = if beat { vec![run.progress()] } else { run.news() };
            if to.wanted() {
                news.iter().for_each(|said| to.tell(said));
            }
        };
        self.drive_telling(run, look, tell)
    }

    /// The loop itself: `tell` is given the run after each look (`false`) and at each heartbeat
    /// (`true`).
    fn drive_telling<S, T>(
        &mut self,
        run: &mut S,
        mut look: impl FnMut(&mut S) -> Look<T>,
        mut tell: impl FnMut(&mut S, bool),
    ) -> Drove<T> {
        loop {
            let looked = look(run);
            tell(run, false);
            let woke = match looked {
                Look::Done(answer) => return Drove::Done(answer),
                Look::Again(next) => self.sleep(next),
                Look::AgainOn(next, wakes) => {
                    let wakes: Vec<&Receiver<()>> = wakes.iter().collect();
                    self.sleep_on(&wakes, next)
                }
                Look::Pause(until) => self.sleep_among(&[], Some(until)).0,
            };
            match woke {
                Woke::Look => {}
                Woke::Heartbeat => tell(run, true),
                Woke::Deadline => return Drove::Deadline,
                Woke::Cancelled => return Drove::Cancelled,
            }
        }
    }

    /// Sleeps on the waiter's own channels until one speaks, `look` is due, the heartbeat ticks,
    /// the call is cancelled or the deadline passes. A channel whose sender is gone can never
    /// speak again and is dropped, so it cannot wake every sleep after it.
    fn sleep(&mut self, look: Option<Instant>) -> Woke {
        let wakes: Vec<&Receiver<()>> = self.wakes.iter().collect();
        let (woke, gone) = self.sleep_among(&wakes, look);
        if !gone.is_empty() {
            let mut index = 0;
            self.wakes.retain(|_| {
                index += 1;
                !gone.contains(&(index - 1))
            });
        }
        woke
    }

    /// Sleeps as `sleep` does on `wakes` instead of the waiter's own channels, for a call whose
    /// set of channels changes between sleeps (`fugue_wait` stops listening to a pane that has
    /// its outcome).
    fn sleep_on(&self, wakes: &[&Receiver<()>], look: Option<Instant>) -> Woke {
        self.sleep_among(wakes, look).0
    }

    /// The sleep, and the indices of `wakes` found disconnected. Every channel that spoke is
    /// emptied, so one burst costs one wake-up.
    fn sleep_among(&self, wakes: &[&Receiver<()>], look: Option<Instant>) -> (Woke, Vec<usize>) {
        let mut select = Select::new();
        for wake in wakes {
            select.recv(wake);
        }
        let cancel = select.recv(&self.cancel);
        let beat = select.recv(&self.heartbeat);
        let until = match (look, self.deadline) {
            (Some(look), Some(deadline)) => Some(look.min(deadline)),
            (look, deadline) => look.or(deadline),
        };
        let ready = match until {
            Some(until) => select.ready_deadline(until).ok(),
            None => Some(select.ready()),
        };
        let gone = drain(wakes);
        let woke = match ready {
            Some(i) if i == cancel => Woke::Cancelled,
            Some(i) if i == beat => {
                let _ = self.heartbeat.try_recv();
                Woke::Heartbeat
            }
            None if self.deadline.is_some_and(|d| Instant::now() >= d) => Woke::Deadline,
            // A channel spoke, or the look is due.
            Some(_) | None => Woke::Look,
        };
        (woke, gone)
    }
}

/// Empties every channel that spoke; answers the indices of those whose sender is gone.
fn drain(wakes: &[&Receiver<()>]) -> Vec<usize> {
    let mut gone = Vec::new();
    for (i, wake) in wakes.iter().enumerate() {
        loop {
            match wake.try_recv() {
                Ok(()) => {}
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    gone.push(i);
                    break;
                }
            }
        }
    }
    gone
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossbeam_channel::{bounded, tick};
    use std::time::Duration;

    fn soon(ms: u64) -> Instant {
        Instant::now() + Duration::from_millis(ms)
    }

    #[test]
    fn a_channel_that_speaks_wakes_a_look_and_is_emptied() {
        let (tx, rx) = bounded(1);
        let mut waiter = Waiter::new().until(soon(10_000)).on(rx.clone());
        tx.send(()).unwrap();
        assert_eq!(waiter.sleep(None), Woke::Look);
        assert!(rx.try_recv().is_err(), "the wake-up was taken");
    }

    #[test]
    fn the_deadline_ends_a_sleep_and_a_due_look_comes_first() {
        let mut waiter = Waiter::new().until(soon(30));
        assert_eq!(waiter.sleep(Some(Instant::now())), Woke::Look);
        assert_eq!(waiter.sleep(Some(soon(60_000))), Woke::Deadline);
        assert!(Instant::now() >= waiter.deadline.unwrap());
        waiter.set_deadline(Some(soon(20)));
        assert_eq!(waiter.sleep(None), Woke::Deadline);
    }

    #[test]
    fn a_cancel_ends_the_sleep_before_its_deadline() {
        let (tx, rx) = bounded::<()>(0);
        let mut waiter = Waiter::new().cancel(&rx).until(soon(60_000));
        let canceller = std::thread::spawn(move || drop(tx));
        assert_eq!(waiter.sleep(None), Woke::Cancelled);
        canceller.join().unwrap();
    }

    #[test]
    fn the_heartbeat_ticks_through_a_long_sleep() {
        let mut waiter = Waiter::new().until(soon(60_000));
        waiter.heartbeat = tick(Duration::from_millis(5));
        assert_eq!(waiter.sleep(None), Woke::Heartbeat);
    }

    #[test]
    fn a_channel_whose_sender_is_gone_is_dropped_not_spun_on() {
        let (tx, rx) = bounded::<()>(1);
        drop(tx);
        let mut waiter = Waiter::new().until(soon(40)).on(rx);
        assert_eq!(waiter.sleep(None), Woke::Look);
        assert!(waiter.wakes.is_empty());
        assert_eq!(waiter.sleep(None), Woke::Deadline);
    }

    /// A call's progress as the client sees it: what it was told, with a fast heartbeat.
    struct Heard {
        wanted: bool,
        said: std::cell::RefCell<Vec<Standing>>,
    }

    impl Heard {
        fn new(wanted: bool) -> Heard {
            Heard { wanted, said: Default::default() }
        }

        fn messages(&self) -> Vec<String> {
            self.said.borrow().iter().map(|s| s.message.clone()).collect()
        }
    }

    impl Reports for Heard {
        fn wanted(&self) -> bool {
            self.wanted
        }
        fn heartbeat(&self) -> Receiver<Instant> {
            if self.wanted { tick(Duration::from_millis(2)) } else { never() }
        }
        fn tell(&self, said: &Standing) {
            self.said.borrow_mut().push(said.clone());
        }
    }

    /// A run that counts its looks; the looks named in `news` are news.
    struct Counting {
        looks: u32,
        news: Vec<u32>,
    }

    impl Progressing for Counting {
        fn progress(&self) -> Standing {
            Standing { done: f64::from(self.looks), total: None, message: "beat".into() }
        }
        fn news(&mut self) -> Vec<Standing> {
            let looks = self.looks;
            let news = self.news.contains(&looks).then(|| format!("look {looks}"));
            news.map(|message| Standing { done: 0.0, total: Some(9.0), message })
                .into_iter()
                .collect()
        }
    }

    #[test]
    fn a_drive_looks_until_a_look_answers() {
        let (tx, rx) = bounded(1);
        let mut waiter = Waiter::new().until(soon(10_000)).on(rx);
        let look = |looks: &mut u32| {
            *looks += 1;
            let _ = tx.try_send(());
            if *looks == 3 { Look::Done(*looks) } else { Look::Again(None) }
        };
        assert_eq!(waiter.drive(&mut 0, look), Drove::Done(3));
        let mut waiter = Waiter::new().until(soon(20));
        assert_eq!(waiter.drive(&mut (), |()| Look::<()>::Again(None)), Drove::Deadline);
    }

    #[test]
    fn a_reporting_drive_tells_each_heartbeat_and_each_news_once() {
        let told = Heard::new(true);
        let mut waiter = Waiter::new().until(soon(30));
        let mut run = Counting { looks: 0, news: vec![1, 2] };
        let look = |run: &mut Counting| {
            run.looks += 1;
            Look::<()>::Again(Some(soon(5)))
        };
        assert_eq!(waiter.drive_reporting(&mut run, look, &told), Drove::Deadline);
        let messages = told.messages();
        assert_eq!(messages[0], "look 1", "news is told as the look finds it");
        let news: Vec<&String> = messages.iter().filter(|m| *m != "beat").collect();
        assert_eq!(news, ["look 1", "look 2"], "each news once: {messages:?}");
        assert!(messages.len() > 2, "the heartbeat reported while the wait slept");
        // The news of the look that answers is told before the answer.
        let told = Heard::new(true);
        let mut run = Counting { looks: 0, news: vec![1] };
        let done = |run: &mut Counting| {
            run.looks += 1;
            Look::Done(())
        };
        assert_eq!(Waiter::new().drive_reporting(&mut run, done, &told), Drove::Done(()));
        assert_eq!(told.messages(), ["look 1"]);
    }

    #[test]
    fn a_drive_whose_client_wants_no_progress_tells_nothing() {
        let told = Heard::new(false);
        let mut waiter = Waiter::new().until(soon(20));
        let mut run = Counting { looks: 0, news: vec![1] };
        let look = |run: &mut Counting| {
            run.looks += 1;
            Look::<()>::Again(None)
        };
        assert_eq!(waiter.drive_reporting(&mut run, look, &told), Drove::Deadline);
        assert!(told.messages().is_empty());
        assert_eq!(run.looks, 1, "with no heartbeat, nothing woke the wait before its deadline");
    }

    #[test]
    fn a_pause_is_not_ended_by_the_channels_but_the_cancel_ends_it() {
        let (tx, rx) = bounded(1);
        let mut waiter = Waiter::new().until(soon(10_000)).on(rx);
        tx.send(()).unwrap();
        let started = Instant::now();
        let look = |looks: &mut u32| {
            *looks += 1;
            if *looks == 2 { Look::Done(()) } else { Look::Pause(soon(30)) }
        };
        let drove = waiter.drive(&mut 0, look);
        assert_eq!(drove, Drove::Done(()));
        assert!(started.elapsed() >= Duration::from_millis(30), "the wake-up did not end it");
        let (cancel_tx, cancel) = bounded::<()>(0);
        let mut waiter = Waiter::new().cancel(&cancel);
        drop(cancel_tx);
        let drove = waiter.drive(&mut (), |()| Look::<()>::Pause(soon(60_000)));
        assert_eq!(drove, Drove::Cancelled);
    }

    #[test]
    fn sleeping_on_a_changing_set_uses_the_channels_given() {
        let (tx, rx) = bounded(1);
        let (_quiet_tx, quiet) = bounded::<()>(1);
        let waiter = Waiter::new().until(soon(10_000)).on(quiet);
        tx.send(()).unwrap();
        assert_eq!(waiter.sleep_on(&[&rx], None), Woke::Look);
        assert!(rx.try_recv().is_err());
    }
}

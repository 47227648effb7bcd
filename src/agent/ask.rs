//! One question, from form to result, the same for every front end (MCP tools, `him ask`).
//!
//! The channel chain of DESIGN.md §5:
//!
//! ```text
//!  browser extension ── a host is connected (or comes back within the grace period)
//!     │ none
//!     ▼
//!  MCP elicitation ──── the client declared form elicitation and no field is a password:
//!     │ not offered,        ≤ 2025-11-25 `elicitation/create` (run here, beside the browser)
//!     │ or it failed        2026-07-28   `input_required` (the caller returns; the retry
//!     ▼                                   is finished by `elicitation_result`)
//!  the terminal ─────── `him ask` run in one (beside the browser; `fallback/terminal.rs`)
//!     │ none, or it failed
//!     ▼
//!  Matrix ───────────── the bridge is linked (`him matrix bridge`): wait for the phone
//!     │ no bridge         (and the browsers) to the deadline
//!     ▼
//!  HIM_FALLBACK ─────── http: the loopback form (beside the browser) · return: chat · off
//! ```
//!
//! The Matrix bridge is a host like a browser's, but a channel beside the browsers rather than
//! one of them: it has every question from the start, as the browsers do, and never counts as
//! "a browser connected", so elicitation and the terminal still come first without one.
//!
//! The question is opened once, here, and this module owns it to the end: the browsers'
//! wait (`agent/wait.rs`) runs first alone, then "beside" the next channel — while elicitation, the
//! terminal or the loopback form holds the question, it stays open to browsers too, so a side panel
//! that appears meanwhile gets it; the first answer wins and the other is withdrawn.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::agent::pending::{Leaving, Parking, Waited};
use crate::agent::pool::{Pool, Question};
use crate::agent::prepare::Prepared;
use crate::agent::result::{self, AskResult, CallContext, Collect, Via};
use crate::agent::wait::{self, Outcome, WaitOptions};
use crate::config::{Config, FallbackMode};
use crate::fallback::loopback::{Loopback, LoopbackEnd};
use crate::fallback::opener;
use crate::fallback::terminal::{self, Terminal, TerminalEnd};
use crate::wire::protocol::{Action, Answer, WithdrawReason};

/// How an `elicitation/create` ended.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitEnd {
    /// The client's reply, as an answer to the form (not yet judged).
    Reply(Answer),
    /// Told to stop first; the request was cancelled at the client.
    Stopped,
    /// The client could not show the form (an error reply, or the session failed).
    Failed(String),
}

/// Runs one `elicitation/create`; must end soon after its token is cancelled.
pub type ElicitRequest<'a> =
    Box<dyn FnOnce(CancellationToken) -> BoxFuture<'a, ElicitEnd> + Send + 'a>;

/// What the caller can offer as MCP elicitation.
pub enum Elicitation<'a> {
    /// None: the client did not declare form elicitation, or this is not an MCP session.
    None,
    /// ≤ 2025-11-25: send `elicitation/create` from the call's own task.
    Request(ElicitRequest<'a>),
    /// 2026-07-28: hand the question to the client as `input_required`; the retry finishes.
    OnRetry,
}

/// What the caller offers beyond the browser.
pub struct Channels<'a> {
    /// Whether the client declared form elicitation (reported in every result).
    pub client_elicitation: bool,
    pub elicitation: Elicitation<'a>,
    /// The person's terminal (`him ask` run in one, unless `--no-tty`).
    pub terminal: Option<Terminal>,
    /// Tells the agent's side something at once (the loopback form's URL).
    pub notice: Box<dyn Fn(String) + Send + Sync + 'a>,
    /// How the agent collects a late answer (named in an unanswered result).
    pub collect: Collect,
    /// Whether a cancelled call keeps its question (see `KeepPlan::if_cancelled`).
    pub keep_if_cancelled: bool,
    /// The questions this process left open after their call returned `pending`: the same
    /// question asked again waits on one where it is (`agent/pending.rs`).
    pub parking: Option<Parking>,
    /// Return `pending` after this long, the question left open in `parking`, when it would
    /// be kept (`HIM_RETURN_AFTER_MS` for this client; only while the browsers have it).
    pub return_after: Option<Duration>,
    /// Say through `notice` that the question waits in the browser (`him ask`, whose person
    /// looks at the terminal they ran it in).
    pub tell_where: bool,
}

impl<'a> Channels<'a> {
    /// The browser, the terminal when given, and the configured fallback (`him ask`).
    pub fn without_elicitation(
        terminal: Option<Terminal>,
        notice: Box<dyn Fn(String) + Send + Sync + 'a>,
    ) -> Channels<'a> {
        Channels {
            client_elicitation: false,
            elicitation: Elicitation::None,
            terminal,
            notice,
            collect: Collect::AnswerOf,
            keep_if_cancelled: true,
            parking: None,
            return_after: None,
            tell_where: true,
        }
    }
}

/// How [`ask`] ended.
#[derive(Debug)]
pub enum Asked {
    Done(Box<AskResult>),
    /// The client must show the form itself and call again (2026-07-28 elicitation); the
    /// question comes back for the caller to describe.
    InputRequired(Box<Prepared>),
}

/// Asks the person through the channel chain and returns the finished result. `cancelled`
/// resolves when the caller gives up. A question that ends unanswered after a person saw
/// it is kept for a late answer (`agent/late.rs`), and the result says how to collect it; the
/// same question asked again returns its kept answer, or waits on the kept question. With
/// `return_after`, a call whose question would be kept returns `pending` at that limit and
/// leaves the question open (`agent/pending.rs`).
///
/// `cancelled` is borrowed, pinned where the caller keeps it: moved in, it would be held
/// twice for as long as the question waits (BENCHMARKS.md, "Memory per pending question").
pub async fn ask(
    pool: &Pool,
    config: &Config,
    mut prepared: Box<Prepared>,
    channels: Channels<'_>,
    mut cancelled: Pin<&mut impl Future<Output = ()>>,
) -> Asked {
    let collect = channels.collect;
    let client_elicitation = channels.client_elicitation;
    let mut plan = crate::agent::late::plan(config, &prepared);
    if let Some(plan) = &mut plan
        && let Some(late) =
            crate::agent::late::same_again(pool, plan, &mut prepared, client_elicitation)
    {
        return Asked::Done(Box::new(late));
    }
    // The same question, left open by a call that returned `pending`: this call waits on it
    // where it is, as get_answer does, up to its own limit.
    if let Some(parking) = &channels.parking
        && plan.as_ref().is_some_and(|plan| plan.from_store)
    {
        let within = channels
            .return_after
            .map_or(prepared.timeout, |after| after.min(prepared.timeout));
        let id = prepared.ask.id.clone();
        match parking.wait(&id, within, collect, cancelled.as_mut()).await {
            Some(Waited::Open(result) | Waited::Ended(result)) => {
                return Asked::Done(Box::new(result));
            }
            // A task cancelled by its agent (`tasks/cancel`): it no longer wants the answer,
            // so the question is withdrawn everywhere, as any cancelled task's.
            Some(Waited::Cancelled(open)) if !channels.keep_if_cancelled => {
                let result = parking.withdraw(&id).unwrap_or(open);
                return Asked::Done(Box::new(result));
            }
            // A call cancelled by its client: the question stays open, kept as it was.
            Some(Waited::Cancelled(result)) => return Asked::Done(Box::new(result)),
            // Answered meanwhile: the store has it.
            Some(Waited::InStore) => {
                if let Some(plan) = &mut plan
                    && let Some(late) = crate::agent::late::same_again(
                        pool,
                        plan,
                        &mut prepared,
                        client_elicitation,
                    )
                {
                    return Asked::Done(Box::new(late));
                }
            }
            None => {}
        }
    }
    pool.ensure_matrix().await;
    // Opened once: it stays open to every browser, now or later, until the chain ends.
    let mut question = pool.open(prepared.ask.clone()).await;
    let store = plan.as_ref().and_then(|plan| plan.store.clone().ok());
    if let Some(mut plan) = plan {
        plan.if_cancelled = channels.keep_if_cancelled;
        question.keep_if_unanswered(plan);
    }
    let early = match (channels.return_after, channels.parking.clone(), store) {
        (Some(after), Some(parking), Some(store)) => Some(Early {
            after,
            parking,
            store,
        }),
        _ => None,
    };
    match chain(
        pool,
        config,
        prepared,
        channels,
        &mut question,
        cancelled,
        early,
    )
    .await
    {
        Chained::Asked(Asked::Done(mut result)) => {
            result::note_kept(&mut result, question.kept(), collect);
            Asked::Done(result)
        }
        Chained::Asked(other) => other,
        Chained::StillOpen {
            prepared,
            started,
            early,
        } => {
            let leaving = Leaving {
                question,
                deadline: started + prepared.timeout,
                deadline_ms: deadline_ms(&prepared),
                form: prepared.form,
                tool: prepared.tool,
                started,
                store: early.store,
                client_elicitation,
                collect,
            };
            Asked::Done(Box::new(early.parking.leave_open(leaving, early.after)))
        }
    }
}

/// What a call needs to return `pending` at `after` with its question left open.
struct Early {
    after: Duration,
    parking: Parking,
    store: crate::wire::keep::Store,
}

/// When `prepared`'s wait ends (Unix ms).
fn deadline_ms(prepared: &Prepared) -> u64 {
    prepared
        .asked_at_ms
        .saturating_add(prepared.timeout.as_millis() as u64)
}

/// How the chain ended.
enum Chained {
    Asked(Asked),
    /// The call's limit came while the browsers had the question, and it was written to the
    /// store to stay open (`agent/pending.rs`): the call returns `pending`, the question open.
    StillOpen {
        prepared: Box<Prepared>,
        started: Instant,
        early: Early,
    },
}

/// The channel chain for `question`, opened on `pool`. With `early`, the browsers' wait ends
/// at that limit once the question would be kept (see [`ask`]).
async fn chain(
    pool: &Pool,
    config: &Config,
    prepared: Box<Prepared>,
    channels: Channels<'_>,
    question: &mut Question,
    mut cancelled: Pin<&mut impl Future<Output = ()>>,
    early: Option<Early>,
) -> Chained {
    let started = Instant::now();
    let deadline = started + prepared.timeout;
    let form = &prepared.form;
    let cx = |via_started: Instant| CallContext {
        tool: prepared.tool,
        form,
        question_id: &prepared.ask.id,
        elapsed_ms: via_started.elapsed().as_millis() as u64,
        client_elicitation: channels.client_elicitation,
    };
    let done = |result: AskResult| Chained::Asked(Asked::Done(Box::new(result)));
    let options = WaitOptions {
        deadline,
        reconnect_grace: config.reconnect_grace,
    };
    // Only a limit shorter than the call's own wait: at the wait's end the call returns anyway.
    let early = early.filter(|early| early.after < prepared.timeout);
    let after = early.as_ref().map(|early| early.after);
    let returned = AtomicBool::new(false);
    if channels.tell_where && question.sent_to() > 0 {
        (channels.notice)(format!(
            "the question is waiting in your browser's him side panel (the him icon in the \
             toolbar, or {}); answer it there, or press Ctrl-C to cancel.",
            crate::SHORTCUT
        ));
    }
    let (outcome, answered_by) = {
        // The browsers' wait ends as on cancellation when the limit comes with the question
        // kept open; `returned` tells the two apart.
        let stop = std::pin::pin!(async {
            match after {
                Some(after) => {
                    // Boxed: only calls that may return `pending` wait on it, and inline it
                    // would size every call's waiting state.
                    let kept_open = Box::pin(crate::agent::pending::kept_open(
                        pool,
                        &prepared.ask.id,
                        started + after,
                        deadline_ms(&prepared),
                    ));
                    tokio::select! {
                        () = cancelled.as_mut() => {}
                        () = kept_open => returned.store(true, Ordering::Relaxed),
                    }
                }
                None => cancelled.as_mut().await,
            }
        });
        question.wait_alone(form, &options, stop).await
    };
    if returned.load(Ordering::Relaxed)
        && let Some(early) = early
    {
        return Chained::StillOpen {
            prepared,
            started,
            early,
        };
    }
    let reason = match outcome {
        Outcome::NoBrowser { was_connected } => if was_connected {
            "The browser went away before the person answered."
        } else {
            "No browser with the him side panel is connected."
        }
        .to_owned(),
        other => {
            question.close_as(&other, answered_by.as_deref());
            let result = result::from_outcome(&cx(started), Via::Extension, other);
            return done(result::via_host(question, answered_by.as_deref(), result));
        }
    };
    // Boxed: most questions end at the browsers, and a call's future is as large as its
    // largest state, which the other channels' would be (BENCHMARKS.md, "Memory per
    // pending question").
    Box::pin(beyond_browsers(
        pool, config, prepared, channels, question, cancelled, started, reason,
    ))
    .await
}

/// The chain after the browsers' wait alone ended without them (see [`chain`]): elicitation,
/// the terminal, Matrix, the configured fallback — each beside the browsers.
#[allow(clippy::too_many_arguments)]
async fn beyond_browsers(
    pool: &Pool,
    config: &Config,
    prepared: Box<Prepared>,
    channels: Channels<'_>,
    question: &mut Question,
    mut cancelled: Pin<&mut impl Future<Output = ()>>,
    started: Instant,
    mut reason: String,
) -> Chained {
    let deadline = started + prepared.timeout;
    let form = &prepared.form;
    let cx = |via_started: Instant| CallContext {
        tool: prepared.tool,
        form,
        question_id: &prepared.ask.id,
        elapsed_ms: via_started.elapsed().as_millis() as u64,
        client_elicitation: channels.client_elicitation,
    };
    let done = |result: AskResult| Chained::Asked(Asked::Done(Box::new(result)));
    let elicitable = channels.client_elicitation && !form.has_password();
    if channels.client_elicitation && form.has_password() {
        reason
            .push_str(" The form asks for a password, which must not go through MCP elicitation.");
    }
    match channels.elicitation {
        Elicitation::OnRetry if elicitable => {
            return Chained::Asked(Asked::InputRequired(prepared));
        }
        Elicitation::Request(request) if elicitable => {
            let shown = Instant::now();
            let race = beside_browser(question, &prepared, deadline, cancelled.as_mut(), request);
            match race.await {
                Race::Channel(ElicitEnd::Reply(answer)) => {
                    return done(elicitation_result(
                        &cx(started),
                        config.auto_reject,
                        answer,
                        shown.elapsed(),
                    ));
                }
                Race::Channel(ElicitEnd::Failed(why)) => {
                    tracing::warn!(id = %prepared.ask.id, "elicitation failed: {why}");
                    reason.push_str(&format!(" The client could not show the form ({why})."));
                }
                Race::Channel(ElicitEnd::Stopped) | Race::Cancelled => {
                    return done(result::from_outcome(
                        &cx(started),
                        Via::Elicitation,
                        Outcome::Cancelled,
                    ));
                }
                Race::Timeout => {
                    return done(result::from_outcome(
                        &cx(started),
                        Via::Elicitation,
                        Outcome::Timeout,
                    ));
                }
                Race::Browser(outcome, host) => {
                    let result = result::from_outcome(&cx(started), Via::Extension, outcome);
                    return done(result::via_host(question, host.as_deref(), result));
                }
            }
        }
        _ => {}
    }

    if let Some(tty) = channels.terminal {
        let request = terminal::Request {
            id: prepared.ask.id.clone(),
            form: form.clone(),
            timeout_ms: deadline
                .saturating_duration_since(Instant::now())
                .as_millis() as u64,
        };
        let race = beside_browser(
            question,
            &prepared,
            deadline,
            cancelled.as_mut(),
            Box::new(|stop| Box::pin(tty.ask(request, stop))),
        )
        .await;
        let cx = cx(started);
        match race {
            Race::Channel(TerminalEnd::Answer(answer)) => {
                return done(result::from_outcome(
                    &cx,
                    Via::Terminal,
                    wait::judge(form, answer),
                ));
            }
            Race::Channel(TerminalEnd::Failed(why)) => {
                tracing::warn!(id = %prepared.ask.id, "the terminal prompt failed: {why}");
                reason.push_str(&format!(" The terminal prompt failed ({why})."));
            }
            Race::Channel(TerminalEnd::Stopped) | Race::Cancelled => {
                return done(result::from_outcome(&cx, Via::Terminal, Outcome::Cancelled));
            }
            Race::Timeout => {
                let result = result::from_outcome(&cx, Via::Terminal, Outcome::Timeout);
                (channels.notice)(format!("{} The terminal prompt is closed.", result.message));
                return done(result);
            }
            Race::Browser(outcome, host) => {
                let result = result::via_host(
                    question,
                    host.as_deref(),
                    result::from_outcome(&cx, Via::Extension, outcome),
                );
                let place = if result.via == Via::Matrix {
                    "on Matrix"
                } else {
                    "in the browser"
                };
                (channels.notice)(format!(
                    "The question was answered {place}; the terminal prompt is closed."
                ));
                return done(result);
            }
        }
    }

    if pool.matrix().is_some() {
        // The phone has had the question from the start; it is the one channel left, so the
        // question waits for it (and any browser that comes) to the deadline.
        let (outcome, host) = question
            .wait_beside(form, deadline, cancelled.as_mut())
            .await;
        question.close_as(&outcome, host.as_deref());
        let result = result::from_outcome(&cx(started), Via::Matrix, outcome);
        let result = match host {
            Some(host) if !question.is_matrix(&host) => AskResult {
                via: Via::Extension,
                ..result
            },
            Some(host) => result::via_host(question, Some(&host), result),
            None => result,
        };
        return done(result);
    }

    if config.fallback != FallbackMode::Http {
        return done(fallback(&cx(started), config.fallback, &reason));
    }
    let asker = pool.identity().for_project(prepared.project.as_deref());
    let loopback = match Loopback::bind(form, &prepared.ask.id, &asker, deadline).await {
        Ok(loopback) => loopback,
        Err(err) => {
            tracing::warn!("the loopback form could not start: {err}");
            reason.push_str(&format!(" The loopback form could not start ({err})."));
            return done(result::needs_user_input(&cx(started), &reason));
        }
    };
    let url = loopback.url();
    let opened = match opener::open(&url) {
        Ok(opened) => opened,
        Err(err) => {
            // The port only, here and below: the URL's token is the question's one secret.
            tracing::warn!(port = loopback.port(), "loopback form not opened: {err}");
            return done(not_opened(&cx(started), reason, &err.to_string()));
        }
    };
    let told = format!("{reason} Answer in the browser: {url}");
    let notice = &channels.notice;
    let race = beside_browser(
        question,
        &prepared,
        deadline,
        cancelled.as_mut(),
        Box::new(|stop| Box::pin(serve_opened(loopback, opened, stop, move || notice(told)))),
    )
    .await;
    let cx = cx(started);
    let mut result = match race {
        Race::Channel(LoopbackEnd::NotOpened(why)) => return done(not_opened(&cx, reason, &why)),
        Race::Channel(LoopbackEnd::Answer(answer)) => {
            result::from_outcome(&cx, Via::Http, wait::judge(form, answer))
        }
        Race::Channel(LoopbackEnd::Stopped) | Race::Cancelled => {
            result::from_outcome(&cx, Via::Http, Outcome::Cancelled)
        }
        Race::Timeout => result::from_outcome(&cx, Via::Http, Outcome::Timeout),
        Race::Browser(outcome, host) => result::via_host(
            question,
            host.as_deref(),
            result::from_outcome(&cx, Via::Extension, outcome),
        ),
    };
    result.form_url = Some(url);
    result.fallback = Some(FallbackMode::Http.name().into());
    done(result)
}

/// Serves the loopback form while its opener is judged (`opener::Verdict`): once the page is
/// opened, `told` says where it is and the form is served to the end; when it could not be
/// opened, nobody will see it, so it ends at once, unless an answer came meanwhile.
async fn serve_opened(
    loopback: Loopback,
    mut opened: opener::Opened,
    stop: CancellationToken,
    told: impl FnOnce(),
) -> LoopbackEnd {
    let port = loopback.port();
    let own = stop.child_token();
    let serving = loopback.serve(own.clone());
    tokio::pin!(serving);
    tokio::select! {
        end = &mut serving => return end,
        verdict = opened.verdict() => match verdict {
            opener::Verdict::Opened => {
                tracing::info!(port, program = %opened.program, "loopback form opened");
                told();
            }
            opener::Verdict::Failed(why) => {
                tracing::warn!(port, "loopback form not opened: {why}");
                own.cancel();
                return match serving.await {
                    LoopbackEnd::Answer(answer) => LoopbackEnd::Answer(answer),
                    _ => LoopbackEnd::NotOpened(why),
                };
            }
        },
    }
    let end = serving.await;
    // Held until the form ends: on macOS it is the launcher page the browser opened.
    drop(opened);
    end
}

/// The loopback page could not be opened, so nobody will see it: the question goes back to
/// the chat at once, as `HIM_FALLBACK=return` sends it, rather than wait out its timeout. No
/// URL: the page closes when the call returns.
fn not_opened(cx: &CallContext<'_>, mut reason: String, why: &str) -> AskResult {
    reason.push_str(&format!(
        " The loopback form could not be opened in a browser ({why}), so it was closed."
    ));
    result::needs_user_input(cx, &reason)
}

/// The result of an elicitation reply that reached us `waited` after the form went out.
/// A decline or cancel faster than `auto_reject` was probably the client's, not the
/// person's.
pub fn elicitation_result(
    cx: &CallContext<'_>,
    auto_reject: Duration,
    answer: Answer,
    waited: Duration,
) -> AskResult {
    let refused = matches!(answer.action, Action::Decline | Action::Cancel);
    if refused && waited < auto_reject {
        return result::auto_rejected(cx, waited.as_millis() as u64);
    }
    result::from_outcome(cx, Via::Elicitation, wait::judge(cx.form, answer))
}

/// The configured fallback when no interactive channel took the question and none is
/// served here (`http` is served by [`ask`]; elsewhere it hands back to the chat).
pub fn fallback(cx: &CallContext<'_>, mode: FallbackMode, reason: &str) -> AskResult {
    match mode {
        FallbackMode::Return | FallbackMode::Http => result::needs_user_input(cx, reason),
        FallbackMode::Off => result::unsupported(cx, reason),
    }
}

/// What a channel's end means for the browsers that have the question too.
trait ChannelEnd {
    /// What the browsers are told when the channel ends this way; `None` when the chain
    /// goes on (the channel failed), so the question stays open to them.
    fn withdraw_reason(&self) -> Option<WithdrawReason>;
}

impl ChannelEnd for ElicitEnd {
    fn withdraw_reason(&self) -> Option<WithdrawReason> {
        match self {
            ElicitEnd::Reply(_) => Some(WithdrawReason::Answered),
            ElicitEnd::Stopped => Some(WithdrawReason::Cancelled),
            ElicitEnd::Failed(_) => None,
        }
    }
}

impl ChannelEnd for TerminalEnd {
    fn withdraw_reason(&self) -> Option<WithdrawReason> {
        match self {
            TerminalEnd::Answer(_) => Some(WithdrawReason::Answered),
            TerminalEnd::Stopped => Some(WithdrawReason::Cancelled),
            TerminalEnd::Failed(_) => None,
        }
    }
}

impl ChannelEnd for LoopbackEnd {
    fn withdraw_reason(&self) -> Option<WithdrawReason> {
        match self {
            LoopbackEnd::Answer(_) => Some(WithdrawReason::Answered),
            LoopbackEnd::Stopped => Some(WithdrawReason::Cancelled),
            // The question goes back to the chat; dropping it withdraws it.
            LoopbackEnd::NotOpened(_) => None,
        }
    }
}

enum Race<T> {
    Channel(T),
    /// The browsers' (or the Matrix bridge's) outcome, and the host that answered.
    Browser(Outcome, Option<std::path::PathBuf>),
    Timeout,
    Cancelled,
}

/// How long a channel may take to withdraw itself once told to stop (send the
/// cancellation, close its port). Both are local and quick.
const WITHDRAW_GRACE: Duration = Duration::from_secs(2);

/// Runs a channel while the question stays open to every browser, now or later; the first
/// to end decides, and the other is withdrawn.
async fn beside_browser<'a, T: ChannelEnd>(
    question: &mut Question,
    prepared: &Prepared,
    deadline: Instant,
    cancelled: Pin<&mut impl Future<Output = ()>>,
    channel: Box<dyn FnOnce(CancellationToken) -> BoxFuture<'a, T> + Send + 'a>,
) -> Race<T> {
    let stop = CancellationToken::new();
    let mut channel = channel(stop.clone());
    let race = tokio::select! {
        end = &mut channel => {
            if let Some(reason) = end.withdraw_reason() {
                question.close(reason, None);
            }
            return Race::Channel(end);
        }
        (outcome, host) = question.wait_beside(&prepared.form, deadline, cancelled) => {
            question.close_as(&outcome, host.as_deref());
            match outcome {
                Outcome::Timeout => Race::Timeout,
                Outcome::Cancelled => Race::Cancelled,
                answered => Race::Browser(answered, host),
            }
        }
    };
    stop.cancel();
    if tokio::time::timeout(WITHDRAW_GRACE, channel).await.is_err() {
        tracing::warn!(id = %prepared.ask.id, "a channel did not stop in time");
    }
    race
}

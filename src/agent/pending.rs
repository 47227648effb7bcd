//! Calls that return `pending` before the client cuts or backgrounds them (issue 24.3,
//! `HIM_RETURN_AFTER_MS`). Claude Code's terminal UI moves a call still running at 120 s to
//! the background and hands what it returns later to the model as "not user input"; other
//! clients cut a call (the OpenAI Agents SDK at 5 s, the TS SDK at 60 s). So an ask tool's
//! call returns `pending` with its `question_id` at the client's limit, while the question
//! stays open, its card as it was, until its own deadline; `get_answer` collects the answer.
//!
//! ```text
//!  ask_* ──(limit)──► `pending` {question_id}   the question is written to the store, and
//!                         │                        stays open to every browser, untouched
//!                         ▼
//!  parked: its own task waits on the question to its deadline ─┬─ answer: judged, written
//!  get_answer / the same ask ──(≤ limit)──► the answer or      │  into the store, accepted
//!                               `pending` again                └─ deadline: kept as any
//!                                                                 unanswered call (HIM_KEEP_MS)
//! ```
//!
//! Only a question that would be kept is parked (`Pool::keep_pending`): its record is in
//! the store from the moment the call returns, and its answer as soon as it comes, so
//! nothing is lost if `him serve` goes away; the parked wait only spares the card a change.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::agent::pool::{Kept, Pool, Question};
use crate::agent::result::{self, AskResult, CallContext, Collect, NOT_CONSENT, Status, Via};
use crate::agent::tools::ToolKind;
use crate::agent::wait::Outcome;
use crate::form::Form;
use crate::platform::clock::unix_ms;
use crate::wire::keep::{KeepError, Store, rfc3339};
use crate::wire::protocol::{Action, Answer, WithdrawReason};

/// How often a call past its limit looks again whether its question would be kept (a
/// browser's host coming back, as a service worker restarts): a lock and a look each time.
const RECHECK: Duration = Duration::from_secs(1);

/// The questions of this process whose call returned `pending`, by id. Over HTTP every
/// session shares them, as they share the answer store.
#[derive(Clone, Default)]
pub struct Parking {
    parked: Arc<Mutex<HashMap<String, Arc<Parked>>>>,
}

/// One question left open by a call that returned `pending`.
struct Parked {
    form: Form,
    tool: ToolKind,
    /// Its own deadline (Unix ms): open until then.
    deadline_ms: u64,
    /// Set once its wait is over.
    ended: watch::Sender<bool>,
    /// How it ended, for the first call that collects it: `None` when the store has it (the
    /// person's answer, or the question kept past its deadline).
    end: Mutex<Option<AskResult>>,
    /// Withdraws it everywhere, kept nowhere: its agent no longer wants the answer.
    withdrawn: CancellationToken,
}

impl Parked {
    /// The context of a result given for it after its own call has returned.
    fn context<'a>(&'a self, id: &'a str) -> CallContext<'a> {
        CallContext {
            tool: self.tool,
            form: &self.form,
            question_id: id,
            elapsed_ms: 0,
            client_elicitation: false,
        }
    }
}

/// What a call that waited on a parked question found.
pub enum Waited {
    /// Still open: the result that says so.
    Open(AskResult),
    /// The call was cancelled while it waited; the question is still open.
    Cancelled(AskResult),
    /// Over: the result (its deadline passed, or an answer the store could not take).
    Ended(AskResult),
    /// Over, and the store has what became of it.
    InStore,
}

/// A question to park, as its call leaves it: open on its pool, written to the store.
pub struct Leaving {
    pub question: Question,
    pub form: Form,
    pub tool: ToolKind,
    pub deadline: Instant,
    pub deadline_ms: u64,
    /// When the call that asked began, for `elapsed_ms`.
    pub started: Instant,
    pub store: Store,
    pub client_elicitation: bool,
    pub collect: Collect,
}

impl Parking {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Parked>>> {
        self.parked
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Leaves `leaving` open to its deadline, waited on by a task of its own: the person's
    /// answer is judged (a refused one goes back to the card), written into the store, then
    /// accepted; at the deadline the question is kept as any unanswered call's.
    fn park(&self, leaving: Leaving) {
        let id = leaving.question.id().to_owned();
        let parked = Arc::new(Parked {
            form: leaving.form.clone(),
            tool: leaving.tool,
            deadline_ms: leaving.deadline_ms,
            ended: watch::channel(false).0,
            end: Mutex::new(None),
            withdrawn: CancellationToken::new(),
        });
        self.lock().insert(id.clone(), parked.clone());
        let parking = self.clone();
        let withdrawn = parked.withdrawn.clone();
        tokio::spawn(async move {
            let (result, stays) = match wait_to_the_end(leaving, withdrawn).await {
                End::InStore => (None, false),
                End::Ended(result) => (Some(result), false),
                End::Held(result) => (Some(result), true),
            };
            *parked
                .end
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()) = result;
            // An answer held here stays until a call collects it; anything else is in the
            // store, where the next call looks once this one is gone.
            if !stays {
                parking.forget(&id, &parked);
            }
            parked.ended.send_replace(true);
        });
    }

    /// Leaves `leaving`'s question open (see [`Parking::park`]) as its call returns at
    /// `after`, and gives the call's `pending` result.
    pub fn leave_open(&self, leaving: Leaving, after: Duration) -> AskResult {
        let cx = CallContext {
            tool: leaving.tool,
            form: &leaving.form,
            question_id: leaving.question.id(),
            elapsed_ms: leaving.started.elapsed().as_millis() as u64,
            client_elicitation: leaving.client_elicitation,
        };
        let result = returned_early(&cx, after, leaving.deadline_ms, leaving.collect);
        tracing::info!(id = %result.question_id, after_ms = after.as_millis() as u64, "returned pending; the question stays open");
        self.park(leaving);
        result
    }

    /// Withdraws parked question `id` from every browser and from the store, kept nowhere
    /// (a task cancelled by its agent while it waited on it); its wait ends at once.
    /// Returns the `cancelled` result of the call that withdrew it.
    pub fn withdraw(&self, id: &str) -> Option<AskResult> {
        let parked = self.lock().get(id).cloned()?;
        parked.withdrawn.cancel();
        let cx = parked.context(id);
        Some(result::from_outcome(
            &cx,
            Via::Extension,
            Outcome::Cancelled,
        ))
    }

    fn forget(&self, id: &str, parked: &Arc<Parked>) {
        let mut map = self.lock();
        if map.get(id).is_some_and(|p| Arc::ptr_eq(p, parked)) {
            map.remove(id);
        }
    }

    /// Waits up to `within` on parked question `id` (get_answer, or the same question asked
    /// again); `None` when it is not parked here.
    pub async fn wait(
        &self,
        id: &str,
        within: Duration,
        collect: Collect,
        cancelled: impl Future<Output = ()>,
    ) -> Option<Waited> {
        let parked = self.lock().get(id).cloned()?;
        let mut ended = parked.ended.subscribe();
        enum Woke {
            Over,
            Waited,
            Cancelled,
        }
        let woke = tokio::select! {
            // An end already there wins over a wait of zero.
            biased;
            // An error: the task is gone, and with it the wait.
            _ = ended.wait_for(|over| *over) => Woke::Over,
            _ = tokio::time::sleep(within) => Woke::Waited,
            _ = cancelled => Woke::Cancelled,
        };
        match woke {
            Woke::Over => {}
            Woke::Waited => return Some(Waited::Open(still_open(&parked, id, collect))),
            Woke::Cancelled => return Some(Waited::Cancelled(still_open(&parked, id, collect))),
        }
        let end = parked
            .end
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        Some(match end {
            Some(result) => {
                self.forget(id, &parked);
                Waited::Ended(result)
            }
            None => Waited::InStore,
        })
    }
}

/// How a parked question's wait ended.
enum End {
    /// The store has what became of it: the person's answer, or the question (the session
    /// went away, which kept it).
    InStore,
    /// Its deadline passed, and it is kept as any unanswered call's: the result that call
    /// would have had, for a call waiting on it now.
    Ended(AskResult),
    /// An answer the store could not take: held here until a call collects it.
    Held(AskResult),
}

/// The parked question's wait, to its deadline or its withdrawal.
async fn wait_to_the_end(leaving: Leaving, withdrawn: CancellationToken) -> End {
    let Leaving {
        mut question,
        form,
        tool,
        deadline,
        started,
        store,
        client_elicitation,
        collect,
        ..
    } = leaving;
    let id = question.id().to_owned();
    // Nothing else cancels it but its pool's end (the session going away), which keeps it.
    let (outcome, host) = question
        .wait_beside(&form, deadline, std::pin::pin!(withdrawn.cancelled()))
        .await;
    let cx = CallContext {
        tool,
        form: &form,
        question_id: &id,
        elapsed_ms: started.elapsed().as_millis() as u64,
        client_elicitation,
    };
    match outcome {
        Outcome::Timeout => {
            tracing::info!(%id, "a question left open after `pending` reached its deadline");
            question.close(WithdrawReason::Timeout, None);
            let mut result = result::from_outcome(&cx, Via::Extension, Outcome::Timeout);
            result::note_kept(&mut result, question.kept(), collect);
            End::Ended(result)
        }
        Outcome::Answered { .. } | Outcome::Declined { .. } | Outcome::Dismissed => {
            tracing::info!(%id, "a question left open after `pending` was answered");
            let answered_at_ms = unix_ms();
            // Written before the host hears `accepted`: the panel says "sent" once it is kept.
            // Who answered, when the phone did (the Matrix bridge names the answerer).
            let answered_by = host
                .as_deref()
                .filter(|h| question.is_matrix(h))
                .and_then(|_| question.answered_by().map(str::to_owned));
            let saved = answer_of(&id, &outcome, answered_by)
                .map(|answer| store.answer(&answer, answered_at_ms));
            question.close(WithdrawReason::Answered, host.as_deref());
            match saved {
                // A browser's host wrote an answer first (it kept the card after a restart):
                // the first answer wins, and the store has it.
                Some(Err(KeepError::AlreadyAnswered)) => End::InStore,
                Some(Err(err)) => {
                    tracing::warn!(%id, "the answer to a question left open could not be kept in the store: {err}");
                    // Held here instead; the open record would only offer the card again.
                    store.remove(&id);
                    let result = result::via_host(
                        &question,
                        host.as_deref(),
                        result::from_outcome(&cx, Via::Extension, outcome),
                    );
                    End::Held(result::mark_late(result, answered_at_ms, false))
                }
                Some(Ok(())) | None => End::InStore,
            }
        }
        Outcome::Invalid(_) => {
            // A host without verdicts sent what does not fit: the question is over.
            question.close(WithdrawReason::Answered, host.as_deref());
            store.remove(&id);
            End::Held(result::from_outcome(&cx, Via::Extension, outcome))
        }
        Outcome::Cancelled if withdrawn.is_cancelled() => {
            tracing::info!(%id, "a question left open was withdrawn: its agent cancelled the wait");
            // Gone from the store before any browser hears of it.
            store.remove(&id);
            question.close_unkept(WithdrawReason::Cancelled);
            End::Ended(result::from_outcome(
                &cx,
                Via::Extension,
                Outcome::Cancelled,
            ))
        }
        // The pool ended (the session went away), which kept the question in the store.
        _ => {
            question.close(WithdrawReason::Cancelled, None);
            End::InStore
        }
    }
}

/// The answer to write to the store for an outcome of the person.
fn answer_of(id: &str, outcome: &Outcome, answered_by: Option<String>) -> Option<Answer> {
    let (action, values, note) = match outcome {
        Outcome::Answered { values, note } => (Action::Submit, Some(values.clone()), note.clone()),
        Outcome::Declined { note } => (Action::Decline, None, note.clone()),
        Outcome::Dismissed => (Action::Cancel, None, None),
        _ => return None,
    };
    Some(Answer {
        id: id.to_owned(),
        action,
        values,
        note,
        answered_by,
    })
}

/// `get_answer`'s (or the same question's) result while the parked question is still open.
fn still_open(parked: &Parked, id: &str, collect: Collect) -> AskResult {
    let cx = parked.context(id);
    let mut result = result::unanswered(
        &cx,
        Status::Pending,
        format!(
            "The person has not answered yet; the question is still open in their browser until \
             {}.",
            rfc3339(parked.deadline_ms)
        ),
        again(id, collect),
    );
    result.via = Via::Extension;
    result
}

/// What a `pending` result tells the agent to do.
fn again(id: &str, collect: Collect) -> String {
    format!(
        "{NOT_CONSENT} Now {} (it waits for the person's answer and returns it, or `pending` \
         again while they have not answered), and do nothing that depends on the answer until \
         then.",
        collect.how(id)
    )
}

/// The ask tool's result when its call returns at `after` with the question open until
/// `deadline_ms`.
fn returned_early(
    cx: &CallContext<'_>,
    after: Duration,
    deadline_ms: u64,
    collect: Collect,
) -> AskResult {
    let mut result = result::unanswered(
        cx,
        Status::Pending,
        format!(
            "The person has not answered within {}. This call returns now, before your client \
             would cut it off or move it to the background; the question stays open in their \
             browser until {}.",
            seconds(after),
            rfc3339(deadline_ms)
        ),
        again(cx.question_id, collect),
    );
    result.via = Via::Extension;
    result
}

/// `after` in seconds as a person reads them: `100 s`, `1.5 s`.
fn seconds(after: Duration) -> String {
    let ms = after.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

/// Resolves once `after` has passed and question `id`, open on `pool`, was written to the
/// store to stay open after its call (`Pool::keep_pending`); never when it cannot be kept,
/// so the call waits to its end as before (returning would lose the answer).
pub async fn kept_open(pool: &Pool, id: &str, after: Instant, deadline_ms: u64) {
    tokio::time::sleep_until(after).await;
    loop {
        match pool.keep_pending(id, deadline_ms) {
            Some(Kept::Until(_)) => return,
            Some(Kept::Failed(why)) => {
                tracing::warn!(%id, "the call waits to its end: the question cannot be kept ({why})");
                return std::future::pending().await;
            }
            // No browser's own host has it now: one may come back (a service worker that
            // restarts), or the question goes on to the next channel, which blocks.
            None => tokio::time::sleep(RECHECK).await,
        }
    }
}

//! The wait for the browsers' answer to one question: the first host to answer wins, every
//! answer is checked against its form ([`judge`]) — one that does not fit goes back to a
//! browser that can have it corrected, and the wait goes on — and the wait ends at the deadline, on
//! cancellation, or — when the browsers are the only channel — once every browser has been
//! gone longer than the reconnect grace. The channel chain (`agent/ask.rs`) owns the question
//! and runs this wait first alone, then beside the next channel.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::time::Instant;

use crate::agent::pool::{HostEvent, Question, Signal};
use crate::form::{AnswerError, Form};
use crate::wire::protocol::{Action, Answer, WithdrawReason};

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Submitted and valid: every field of the form present (`null` where left empty).
    Answered {
        values: Map<String, Value>,
        note: Option<String>,
    },
    Declined {
        note: Option<String>,
    },
    /// The person dismissed the question without answering (closed it).
    Dismissed,
    /// The answer did not fit the form; the values are not passed on.
    Invalid(AnswerError),
    Timeout,
    /// The tool call was cancelled or the client went away.
    Cancelled,
    /// No browser took the question: none was connected when it was asked, or all went
    /// away and none came back within the grace period. The next channel should take it.
    NoBrowser {
        was_connected: bool,
    },
    /// Every host refused the question (e.g. too large for the browser).
    Refused(String),
}

#[derive(Debug, Clone)]
pub struct WaitOptions {
    pub deadline: Instant,
    pub reconnect_grace: Duration,
}

/// Checks an answer against the form it answers.
pub fn judge(form: &Form, answer: Answer) -> Outcome {
    let note = answer.note.filter(|n| !n.trim().is_empty());
    match answer.action {
        Action::Submit => {
            let values = answer.values.unwrap_or_default();
            match form.check_reply(&values, note.as_deref()) {
                Ok(values) => Outcome::Answered { values, note },
                Err(err) => Outcome::Invalid(err),
            }
        }
        Action::Decline => Outcome::Declined { note },
        Action::Cancel => Outcome::Dismissed,
    }
}

impl Question {
    /// Waits for the browsers' answer as the question's only channel: the wait also ends
    /// when no browser is linked for the reconnect grace, or every host refused the
    /// question, so that the next channel can take it. The caller closes the question with
    /// [`Question::close_as`].
    ///
    /// `cancelled` is borrowed, pinned where its owner keeps it, rather than moved into this
    /// wait: a call's waiting future is its largest state, held for as long as the question
    /// waits, and a moved future would be held twice (BENCHMARKS.md, "Memory per pending
    /// question").
    pub async fn wait_alone(
        &mut self,
        form: &Form,
        options: &WaitOptions,
        cancelled: Pin<&mut impl Future<Output = ()>>,
    ) -> (Outcome, Option<PathBuf>) {
        let mut orphaned_at = None;
        // A host the rescan linked since the question opened has it too.
        if self.sent_to() == 0 && self.hosts() == 0 {
            match self.hosts_lost_within(options.reconnect_grace) {
                // A browser is coming back: wait for it as for a question asked a moment ago.
                Some(lost_at) => orphaned_at = Some(lost_at),
                None => {
                    let none = Outcome::NoBrowser {
                        was_connected: false,
                    };
                    return (none, None);
                }
            }
        }
        let role = Role::Only {
            reconnect_grace: options.reconnect_grace,
            orphaned_at,
        };
        wait_on(self, form, options.deadline, role, cancelled).await
    }

    /// Waits for the browsers' answer while another channel (elicitation, the loopback
    /// form) holds the question too: browsers may come, go and refuse; only an answer, the
    /// deadline or cancellation end this wait.
    pub async fn wait_beside(
        &mut self,
        form: &Form,
        deadline: Instant,
        cancelled: Pin<&mut impl Future<Output = ()>>,
    ) -> (Outcome, Option<PathBuf>) {
        wait_on(self, form, deadline, Role::Beside, cancelled).await
    }

    /// Closes the question as `outcome` ended it. Only a wait that ran out or was cancelled
    /// may keep it for a late answer: a question every browser refused, or that lost its
    /// browser, was not waiting in front of the person.
    pub fn close_as(&mut self, outcome: &Outcome, answered_by: Option<&Path>) {
        let reason = withdraw_reason(outcome);
        match outcome {
            Outcome::Refused(_) | Outcome::NoBrowser { .. } => self.close_unkept(reason),
            _ => self.close(reason, answered_by),
        }
    }
}

/// What the other browsers are told when the question ends with `outcome`.
pub fn withdraw_reason(outcome: &Outcome) -> WithdrawReason {
    match outcome {
        Outcome::Timeout => WithdrawReason::Timeout,
        Outcome::Answered { .. }
        | Outcome::Declined { .. }
        | Outcome::Dismissed
        | Outcome::Invalid(_) => WithdrawReason::Answered,
        _ => WithdrawReason::Cancelled,
    }
}

/// What, besides an answer, the deadline and cancellation, ends a wait.
#[derive(Debug, Clone, Copy)]
enum Role {
    Only {
        reconnect_grace: Duration,
        orphaned_at: Option<Instant>,
    },
    Beside,
}

async fn wait_on(
    question: &mut Question,
    form: &Form,
    deadline: Instant,
    role: Role,
    mut cancelled: Pin<&mut impl Future<Output = ()>>,
) -> (Outcome, Option<PathBuf>) {
    let (grace, orphaned_at) = match role {
        Role::Only {
            reconnect_grace,
            orphaned_at,
        } => (Some(reconnect_grace), orphaned_at),
        Role::Beside => (None, None),
    };
    // Armed while no browser is linked and the browsers are the only channel; disarmed
    // when one comes back. Armed at once if the only host already went away after it got
    // the question, or went just before.
    let mut orphaned_at =
        orphaned_at.or_else(|| (grace.is_some() && question.hosts() == 0).then(Instant::now));
    let timer = tokio::time::sleep_until(deadline);
    tokio::pin!(timer);
    let mut refusals = 0usize;
    loop {
        let grace_end = orphaned_at
            .zip(grace)
            .map(|(t, grace)| t + grace)
            .filter(|end| *end < deadline);
        let wake = grace_end.unwrap_or(deadline);
        if timer.deadline() != wake {
            timer.as_mut().reset(wake);
        }
        tokio::select! {
            _ = &mut timer => {
                return match grace_end {
                    Some(_) => (Outcome::NoBrowser { was_connected: true }, None),
                    None => (Outcome::Timeout, None),
                };
            }
            _ = cancelled.as_mut() => return (Outcome::Cancelled, None),
            signal = question.next_signal() => match signal {
                Signal::Hosts(hosts) if grace.is_some() => {
                    orphaned_at = match (hosts, orphaned_at) {
                        (0, None) => Some(Instant::now()),
                        (0, since) => since,
                        _ => None,
                    };
                }
                Signal::Hosts(_) => {}
                Signal::Event(Some(HostEvent::Answer { host, answer })) => {
                    // Only the Matrix bridge can tell who answered; a browser's claim is not
                    // taken.
                    let answerer = answer.answered_by.clone().filter(|_| question.is_matrix(&host));
                    let outcome = judge(form, *answer);
                    let Outcome::Invalid(err) = outcome else {
                        question.set_answered_by(answerer);
                        return (outcome, Some(host));
                    };
                    match question.verdicts(&host) {
                        // The person can correct it: the wait goes on, same id, same deadline.
                        Some(true) => {
                            tracing::info!(id = question.id(), "refused an answer: {err}");
                            question.refuse(&host, err.field, err.message);
                        }
                        // That host awaits a verdict its extension cannot show: the withdraw
                        // that closing sends it ends the question there.
                        Some(false) => return (Outcome::Invalid(err), None),
                        None => return (Outcome::Invalid(err), Some(host)),
                    }
                }
                Signal::Event(Some(HostEvent::Shown { host })) => {
                    tracing::debug!(id = question.id(), host = %host.display(), "question shown");
                }
                // The Matrix bridge cannot take every question (a permission prompt): the
                // browsers still may, and only theirs are counted.
                Signal::Event(Some(HostEvent::Refused { host, message })) if question.is_matrix(&host) => {
                    tracing::info!(id = question.id(), "the Matrix bridge did not take the question: {message}");
                }
                Signal::Event(Some(HostEvent::Refused { host, message })) => {
                    tracing::warn!(id = question.id(), host = %host.display(), "host refused the question: {message}");
                    refusals += 1;
                    if grace.is_some() && refusals >= question.hosts().max(1) {
                        return (Outcome::Refused(message), None);
                    }
                }
                // The pool is gone: the agent is going away.
                Signal::Event(None) => return (Outcome::Cancelled, None),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form(allow_note: bool) -> Form {
        serde_json::from_value(json!({
            "title": "Pick", "allow_note": allow_note,
            "fields": [{"name": "choice", "type": "radio", "label": "Pick",
                        "options": [{"value": "a", "label": "a"}, {"value": "b", "label": "b"}]}]
        }))
        .unwrap()
    }

    fn answer(action: Action, values: Value, note: Option<&str>) -> Answer {
        Answer {
            id: "x".into(),
            action,
            values: values.as_object().cloned(),
            note: note.map(str::to_owned),
            answered_by: None,
        }
    }

    #[test]
    fn a_fitting_submit_is_an_answer() {
        let outcome = judge(
            &form(false),
            answer(Action::Submit, json!({"choice": "b"}), None),
        );
        assert_eq!(
            outcome,
            Outcome::Answered {
                values: json!({"choice": "b"}).as_object().unwrap().clone(),
                note: None
            }
        );
    }

    #[test]
    fn a_value_the_form_did_not_offer_is_invalid() {
        let outcome = judge(
            &form(false),
            answer(Action::Submit, json!({"choice": "z"}), None),
        );
        assert!(matches!(outcome, Outcome::Invalid(e) if e.field.as_deref() == Some("choice")));
    }

    #[test]
    fn a_note_is_kept_only_where_the_form_allows_one() {
        assert!(matches!(
            judge(
                &form(false),
                answer(Action::Submit, json!({"choice": "a"}), Some("but"))
            ),
            Outcome::Invalid(_)
        ));
        assert!(matches!(
            judge(&form(true), answer(Action::Submit, json!({"choice": "a"}), Some("but"))),
            Outcome::Answered { note: Some(n), .. } if n == "but"
        ));
    }

    #[test]
    fn a_reply_of_neither_option_nor_note_is_invalid_where_a_note_may_stand_in() {
        // ask_choice with allow_free_text: the choice is optional because a note may answer.
        for (values, note) in [(json!({}), None), (json!({"choice": null}), Some("  "))] {
            assert!(matches!(
                judge(&form(true), answer(Action::Submit, values, note)),
                Outcome::Invalid(e) if e.field.as_deref() == Some("choice")
                    && e.message == crate::form::NOTHING_GIVEN
            ));
        }
        assert!(matches!(
            judge(&form(true), answer(Action::Submit, json!({}), Some("neither"))),
            Outcome::Answered { note: Some(n), .. } if n == "neither"
        ));
    }

    #[test]
    fn decline_and_cancel_are_outcomes_of_the_person() {
        assert_eq!(
            judge(
                &form(false),
                answer(Action::Decline, json!(null), Some("no"))
            ),
            Outcome::Declined {
                note: Some("no".into())
            }
        );
        assert_eq!(
            judge(&form(false), answer(Action::Cancel, json!(null), None)),
            Outcome::Dismissed
        );
    }
}

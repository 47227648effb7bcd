// What keeps a card's controls disabled. Several things can each say "nothing can be sent
// now" — an answer in flight (setDisabled), no host to send to (setSendable false), a
// question that closed (setReadOnly) — and the controls work again only once none of them
// holds, whichever order they are lifted in. Views that are not a form (a permission card,
// a card whose form could not be drawn) take these three calls from here; lib/form.js keeps
// its own, which also locks the fields.

/** The three calls of a card's view, calling `apply(held)` whenever what holds changes. */
export function holdControls(apply) {
  const reasons = { disabled: false, unsendable: false, readOnly: false };
  const hold = (reason, value) => {
    reasons[reason] = Boolean(value);
    apply(reasons.disabled || reasons.unsendable || reasons.readOnly);
  };
  return {
    setDisabled: (value) => hold('disabled', value),
    setSendable: (value) => hold('unsendable', !value),
    setReadOnly: (value) => hold('readOnly', value),
  };
}

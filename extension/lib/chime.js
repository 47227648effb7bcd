// The optional sound of a question arriving while the panel is open but not in focus.
// Made on the spot with Web Audio, so there is no audio file to ship or load: two soft notes,
// a third of a second in all, quiet enough to sit under whatever else is playing.

/** [frequency in Hz, start in s] of each note. */
const NOTES = [
  [660, 0],
  [880, 0.13],
];
const PEAK_GAIN = 0.12;
const NOTE_S = 0.22;

/** Plays the chime on `audio` (an AudioContext that is running). */
export function playChime(audio) {
  const now = audio.currentTime;
  for (const [frequency, at] of NOTES) {
    const note = audio.createOscillator();
    const level = audio.createGain();
    note.type = 'sine';
    note.frequency.value = frequency;
    // A ramp up and down, not a step: a step clicks.
    level.gain.setValueAtTime(0.0001, now + at);
    level.gain.exponentialRampToValueAtTime(PEAK_GAIN, now + at + 0.02);
    level.gain.exponentialRampToValueAtTime(0.0001, now + at + NOTE_S);
    note.connect(level).connect(audio.destination);
    note.start(now + at);
    note.stop(now + at + NOTE_S + 0.02);
  }
}

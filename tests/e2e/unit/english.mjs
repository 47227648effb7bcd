// Imported first by the unit tests that read lib's words: in Node there is no browser i18n
// API, so lib/i18n.js is handed the English messages file, as the loopback page hands it
// the file of its language.
import { readFileSync } from 'node:fs';
import { useMessages } from '../../../extension/lib/i18n.js';

export const english = JSON.parse(readFileSync(new URL('../../../extension/_locales/en/messages.json', import.meta.url), 'utf8'));
useMessages(english);

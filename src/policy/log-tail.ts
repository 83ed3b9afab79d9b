/**
 * The last lines of a dead run's output, as keeper keeps them: at most 50 lines and 8 kB, with terminal escape
 * sequences and control characters taken out, so that printing a record in a terminal cannot move the cursor,
 * clear the screen, rewrite earlier lines or reverse text (a tenant writes what it likes to its output).
 */

export const LOG_TAIL_MAX_LINES = 50;
export const LOG_TAIL_MAX_BYTES = 8 * 1024;

const CSI = /\x1b\[[0-?]*[ -/]*[@-~]/g; // colours, cursor moves, screen clears
const OSC = /\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?/g; // window titles, hyperlinks
const OTHER_ESCAPE = /\x1b[@-_]?/g;
// C0 except tab and newline, DEL, C1, and the Unicode bidirectional overrides and isolates.
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;

/** Text a terminal prints as it is: lines and tabs, nothing that acts. */
export function cleanLogText(raw: string): string {
  return raw.replace(/\r\n?/g, '\n').replace(CSI, '').replace(OSC, '').replace(OTHER_ESCAPE, '').replace(CONTROL, '');
}

/** The cleaned last lines of `raw`: at most LOG_TAIL_MAX_LINES lines and LOG_TAIL_MAX_BYTES bytes of UTF-8. */
export function boundLogTail(raw: string): string {
  const lines = cleanLogText(raw).split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const tail = lines.slice(-LOG_TAIL_MAX_LINES);
  while (tail.length > 1 && Buffer.byteLength(tail.join('\n')) > LOG_TAIL_MAX_BYTES) tail.shift();
  return lastBytes(tail.join('\n'), LOG_TAIL_MAX_BYTES);
}

/** The end of `text` within `max` bytes, cut at a character boundary (one line longer than the bound). */
function lastBytes(text: string, max: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= max) return text;
  let start = bytes.length - max;
  while (start < bytes.length && (bytes[start] & 0xc0) === 0x80) start++; // not inside a character
  return bytes.subarray(start).toString('utf8');
}

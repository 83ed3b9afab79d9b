/**
 * Text of errors and engine answers, shown in one line: a log field, a status table's cell, a CLI's one-line error.
 * Every room may import it; it imports nothing.
 */

/** The first line of `text`: what a one-line error or a table cell shows of a longer message. */
export function firstLine(text: string): string {
  return text.split('\n')[0];
}

/** An error's message (or anything thrown, as text) in one line. */
export function oneLine(err: unknown): string {
  return firstLine(err instanceof Error ? err.message : String(err));
}

/**
 * What the agent hands the model when a tool threw: a tool result whose text says so (the model may answer it).
 * One home for its words, so the inspector can tell a failed call's result from a result (inspector/row-detail.ts).
 */

/** The result text of tool `name` that threw `message`. */
export const toolFailureText = (name: string, message: string) => `Tool '${name}' failed: ${message}`;

/** The error message when `content` is the result of tool `name` that threw (null: a result). */
export function toolFailureOf(name: string, content: string): string | null {
  const prefix = toolFailureText(name, '');
  return content.startsWith(prefix) ? content.slice(prefix.length) : null;
}

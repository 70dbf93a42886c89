/**
 * {@link MemoryToolError}, the error every room of the memory tool throws for what the model
 * can fix.
 *
 * @module
 */

/** The error a command ends in: its message is the tool result text the model reads. */
export class MemoryToolError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MemoryToolError';
  }
}

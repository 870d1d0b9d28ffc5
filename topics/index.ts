import type { TopicDefinition } from './envelope.js';
import { chainEvents } from './chain.events.js';
import { chainHeights } from './chain.heights.js';
import { complaintCommands } from './complaint.commands.js';
import { relayCommands } from './relay.commands.js';
import { swapVerdicts } from './swap.verdicts.js';
import { violations } from './violations.js';

export * from './envelope.js';
export { chainEvents, chainEventId, type ChainEvent } from './chain.events.js';
export { chainHeights, chainHeightId, type ChainHeight } from './chain.heights.js';
export { complaintCommands, type ComplaintCommand } from './complaint.commands.js';
export { relayCommands, type RelayCommand } from './relay.commands.js';
export { swapVerdicts, verdictId, type SwapVerdict, type SwapTransaction } from './swap.verdicts.js';
export { violations, violationId, type Violation } from './violations.js';

/** Every topic of the pipeline; each also has a dead-letter topic `<name>.dlq`. */
export const allTopics: readonly TopicDefinition<any>[] = [
  chainHeights,
  chainEvents,
  complaintCommands,
  relayCommands,
  swapVerdicts,
  violations,
];

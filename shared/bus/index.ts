export * from './port.js';
export { PoisonMessageError, PartitionFencedError } from './errors.js';
export { applyOnce } from './apply-once.js';
export { partitionFor } from './partitioner.js';

// Typed access to the parts of the golden vectors (test/fixtures/otmoic-relay.json, a copy of the shared
// hand-out made with the original Otmoic contract and ethers 5) that the contract tests use.
import { readFileSync } from 'node:fs';

import type { TransferIdCase } from '../test/fixtures/otmoic-relay-vectors.js';

export type TransferIdVector = TransferIdCase;

export interface EventVector {
  type: string;
  event: string;
  topic0: string;
  log_data: string;
}

/** A relay "behalf" command as the chain client receives it; addresses may be hex or decimal uint256. */
export interface BehalfCommand {
  sender?: string;
  sender_wallet_name?: string;
  user_receiver_address: string;
  token: string;
  token_amount: string;
  eth_amount: string;
  hash_lock: string;
  preimage?: string;
  agreement_reached_time: number;
  expected_single_step_time: number;
  tolerant_single_step_time: number;
  earliest_refund_time: number;
}

export interface CalldataVector {
  name: string;
  function: string;
  selector: string;
  /** Absent where the original client failed (HTTP 500) instead of building a call. */
  calldata?: string;
  request: {
    command_transfer_out_confirm?: BehalfCommand;
    command_transfer_in_confirm?: BehalfCommand;
    command_transfer_refund?: BehalfCommand;
  };
}

export interface GoldenVectors {
  transfer_id: [
    {
      out_erc20_chain97: TransferIdVector;
      in_erc20_chain97: TransferIdVector;
      pre_is_out_variant_v2_2_0_out_erc20_chain97: string;
    },
  ];
  /** [LogTransferOutConfirmed, LogNewTransferOut, {topics: event name -> topic0}] */
  events: [EventVector, EventVector, { topics: Record<string, string> }];
  calldata: CalldataVector[];
}

export function loadGoldenVectors(): GoldenVectors {
  const url = new URL('../test/fixtures/otmoic-relay.json', import.meta.url);
  return JSON.parse(readFileSync(url, 'utf8')) as GoldenVectors;
}

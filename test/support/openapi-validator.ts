/**
 * JSON Schema 2020-12 (the dialect of OpenAPI 3.1) for the tests that hold a served OpenAPI document to real
 * bodies and answers: strict about the schemas themselves (an unknown keyword is an error), every error
 * reported. Union types (`type: ['string', 'number']`) are allowed: the documents use them.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';

export function openApiValidator(): Ajv2020 {
  return new Ajv2020({ strict: true, strictRequired: false, allowUnionTypes: true, allErrors: true });
}

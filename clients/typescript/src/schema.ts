// The types openapi-typescript generates from the repository's openapi.yaml
// (`npm run generate`, checked by `npm run check:generated`). Re-exported
// rather than copied, so the client can never disagree with the contract.
export type { paths, components, operations } from '../../../server/generated/api.d.ts';

// @pressroom/client: the typed client of the Pressroom API (./client.ts) and,
// for Node, streaming media uploads (./upload.ts). Browsers import
// `@pressroom/client/browser` (./client.ts alone, no Node modules).
export * from './client.ts';
export { uploadMedia, type MediaItem, type UploadMediaOptions, type UploadProgress } from './upload.ts';

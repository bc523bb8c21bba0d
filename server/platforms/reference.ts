import type { PlatformOption } from './types.ts';

/**
 * YouTube's video categories that uploads may use (videoCategories.list,
 * regionCode=US, assignable=true). The ids are YouTube's own, so a video
 * published through any connector names the category the platform knows.
 */
export const YOUTUBE_VIDEO_CATEGORIES: readonly PlatformOption[] = Object.freeze([
  { id: '1', name: 'Film & Animation' },
  { id: '2', name: 'Autos & Vehicles' },
  { id: '10', name: 'Music' },
  { id: '15', name: 'Pets & Animals' },
  { id: '17', name: 'Sports' },
  { id: '19', name: 'Travel & Events' },
  { id: '20', name: 'Gaming' },
  { id: '22', name: 'People & Blogs' },
  { id: '23', name: 'Comedy' },
  { id: '24', name: 'Entertainment' },
  { id: '25', name: 'News & Politics' },
  { id: '26', name: 'Howto & Style' },
  { id: '27', name: 'Education' },
  { id: '28', name: 'Science & Technology' },
  { id: '29', name: 'Nonprofits & Activism' },
]);

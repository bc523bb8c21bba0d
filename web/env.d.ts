// esbuild bundles the page's CSS imports into app.css.
declare module '*.css';

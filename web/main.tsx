// Entry of the web app at /app (server/web-app.ts bundles it with esbuild).
import { render } from 'preact';
import { App } from './app.tsx';
import './app.css';

render(<App />, document.getElementById('root')!);

// Page entry: mount the app and expose its test/benchmark hooks.
import { App } from './app';
import './style.css';

const app = new App(document.getElementById('app')!);
(window as unknown as { minferViz: ReturnType<App['debugApi']> }).minferViz = app.debugApi();
void app.start();

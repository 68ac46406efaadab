/**
 * memstore with every request through Yoga (no lean path), compiled reads still on: the
 * arm `npm run bench -- --without-lean-path` measures beside the usual one, so that the
 * lean path's gain is read from one run. It runs the production build (dist/, which the
 * benchmark builds first), as the usual arm does.
 */
import { failedToStart, main } from '../../dist/server.js';

main({ leanPath: false }).catch(failedToStart);

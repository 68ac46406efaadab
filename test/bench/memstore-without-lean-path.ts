/**
 * memstore with every request through Yoga (no lean path), compiled reads still on: the
 * arm `npm run bench -- --without-lean-path` measures beside the usual one, so that the
 * lean path's gain is read from one run.
 */
import { failedToStart, main } from '../../src/server.js';

main({ leanPath: false }).catch(failedToStart);

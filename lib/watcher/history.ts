/** The watcher's history window lives with the classifier (lib/check/history-window.ts), where a replay uses it too. */
export { historyWindowMs, MAX_HISTORY_READINGS, trimHistory } from "../check/history-window";

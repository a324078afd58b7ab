/*
 * start.js: the page's own content, once every part has registered.
 */

pageHooks.forEach((fn) => fn());

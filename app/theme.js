// The theme asked for in the URL, on <html> before anything is drawn (style/theme.css), inlined
// into every app page by Trunk: ?theme=light|dark forces one; ?theme=host (an embed on a blog)
// takes the host page's colours once its loader reports them (server/src/web/embed.js): a
// transparent background, light or dark text as the host is. Until then, and for good where the
// host strips the loader, it stays opaque in the reader's system colours, so it is never dark
// text on a dark page.
(function () {
  var html = document.documentElement;
  var theme = new URLSearchParams(location.search).get("theme");
  function use(theme, scheme) {
    html.setAttribute("data-rl-theme", theme);
    html.style.colorScheme = scheme;
  }
  if (theme === "light" || theme === "dark") use(theme, theme);
  if (theme !== "host") return;
  addEventListener("message", function (event) {
    var host = event.data;
    if (event.source !== parent || !host || host.type !== "racelab:host") return;
    html.setAttribute("data-rl-background", "transparent");
    use(host.dark ? "dark" : "light", host.scheme === "dark" ? "dark" : "light");
  });
})();

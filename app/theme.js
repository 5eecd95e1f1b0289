// The theme asked for in the URL, on <html> before anything is drawn (style/theme.css), inlined
// into both app pages by Trunk: ?theme=light|dark forces one; ?theme=host (an embed on a blog)
// is transparent, in the colours the host page's loader reports (server/src/web/embed.js),
// light until it does.
(function () {
  var html = document.documentElement;
  var theme = new URLSearchParams(location.search).get("theme");
  function use(theme, scheme) {
    html.setAttribute("data-rl-theme", theme);
    html.style.colorScheme = scheme;
  }
  if (theme === "light" || theme === "dark") use(theme, theme);
  if (theme !== "host") return;
  html.setAttribute("data-rl-background", "transparent");
  use("light", "light");
  addEventListener("message", function (event) {
    var host = event.data;
    if (event.source !== parent || !host || host.type !== "racelab:host") return;
    use(host.dark ? "dark" : "light", host.scheme === "dark" ? "dark" : "light");
  });
})();

// "/" on any page puts the cursor in the header's search box (as on GitHub or MDN), unless the
// person is typing somewhere already. Without JavaScript the box is still there to click.
document.addEventListener("keydown", (event) => {
  if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  const typing = target.closest && target.closest("input, textarea, select, [contenteditable]");
  if (typing && target.getAttribute("contenteditable") !== "false") return;
  const box = document.getElementById("site-search");
  if (!box) return;
  event.preventDefault();
  box.focus();
  box.select();
});

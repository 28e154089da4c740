// Copy buttons: shown only when JavaScript runs (the text stays selectable without it).
document.querySelectorAll("button.copy[data-copy]").forEach((button) => {
  button.hidden = false;
  const label = button.textContent;
  button.addEventListener("click", async () => {
    const source = document.getElementById(button.dataset.copy);
    source.select();
    try {
      await navigator.clipboard.writeText(source.value);
    } catch {
      document.execCommand("copy"); // older browsers, or a page without clipboard permission
    }
    button.textContent = button.dataset.copied || "✓";
    setTimeout(() => { button.textContent = label; }, 1500);
  });
});

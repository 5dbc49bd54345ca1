// Drives the official RocketMQ Dashboard 2.1.0 front end in Debian's chromium through a list of
// steps (steps.json) and writes what each step showed: the visible text of the page or of the
// open dialog, and the JSON answers of the dashboard's own API calls made during the step.
// Usage: node drive.mjs <steps.json> <out.json> <screenshot-dir> [base-url]
import fs from 'node:fs';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

const [stepsFile, outFile, shotDir, base = 'http://localhost:8082'] = process.argv.slice(2);
const steps = JSON.parse(fs.readFileSync(stepsFile, 'utf8'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const page = await browser.newPage();
await page.setViewport({ width: 1920, height: 1200 });

let calls = [];
page.on('response', async (res) => {
  const url = res.url();
  if (!url.startsWith(base) || !/\.(query|do)/.test(url)) return;
  let body = null;
  try { body = await res.json(); } catch { body = null; }
  const post = res.request().postData() ?? null;
  calls.push({ method: res.request().method(), path: url.slice(base.length), post, status: res.status(), body });
});
page.on('dialog', (d) => d.accept());

// The topmost open dialog/drawer if any, else the page's content area; with `values`, each form
// field's label and current input value follow (innerText leaves input values out); with `notices`,
// the open notifications and messages (the toasts that report an action's result).
async function visibleText(values = false, notices = false) {
  return page.evaluate((values, notices) => {
    const shown = (el) => el && el.offsetParent !== null && getComputedStyle(el).visibility !== 'hidden';
    const dialogs = [...document.querySelectorAll('.ant-modal-content, .ant-drawer-content')].filter(shown);
    const el = dialogs.length ? dialogs[dialogs.length - 1] : (document.querySelector('.ant-layout-content') || document.body);
    let text = el.innerText;
    if (values) {
      for (const item of el.querySelectorAll('.ant-form-item')) {
        const label = item.querySelector('.ant-form-item-label');
        const field = item.querySelector('input:not([type=search]), textarea, button[role=switch]');
        if (!label || !field) continue;
        const value = field.getAttribute('role') === 'switch' ? field.getAttribute('aria-checked') : field.value;
        text += `\n${label.innerText.trim()}=${value}`;
      }
    }
    if (notices) {
      for (const n of document.querySelectorAll('.ant-notification-notice, .ant-message-notice')) text += `\nnotice: ${n.innerText}`;
    }
    return text;
  }, values, notices);
}

// Clicks the nth visible element (button, tab, link, menu item, option) whose own text is `text`,
// inside the topmost dialog when `inDialog`, else anywhere.
async function clickText(text, nth = 0, inDialog = false) {
  const ok = await page.evaluate((text, nth, inDialog) => {
    const shown = (el) => el.offsetParent !== null && getComputedStyle(el).visibility !== 'hidden';
    let root = document;
    if (inDialog) {
      const d = [...document.querySelectorAll('.ant-modal-content, .ant-drawer-content')].filter(shown);
      root = d[d.length - 1] || document;
    }
    const sel = 'button, a, [role=tab], [role=menuitem], .ant-select-item-option, .ant-radio-button-wrapper, label, .ant-tabs-tab-btn';
    const hits = [...root.querySelectorAll(sel)].filter((b) => shown(b) && b.innerText.trim() === text);
    if (hits.length <= nth) return false;
    hits[nth].click();
    return true;
  }, text, nth, inDialog);
  if (!ok) throw new Error(`no visible "${text}" #${nth}`);
}

// Types into the nth visible input found by placeholder, by its form label, or by CSS selector.
async function fill(spec) {
  const handle = await page.evaluateHandle((spec) => {
    const shown = (el) => el.offsetParent !== null;
    let inputs = [];
    if (spec.placeholder) inputs = [...document.querySelectorAll(`input[placeholder="${spec.placeholder}"], textarea[placeholder="${spec.placeholder}"]`)];
    else if (spec.label) {
      for (const item of document.querySelectorAll('.ant-form-item')) {
        const l = item.querySelector('.ant-form-item-label');
        if (l && l.innerText.replace(/[:：*]/g, '').trim() === spec.label) inputs.push(...item.querySelectorAll('input, textarea'));
      }
    } else if (spec.css) inputs = [...document.querySelectorAll(spec.css)];
    inputs = inputs.filter(shown);
    return inputs[spec.nth || 0] || null;
  }, spec);
  const el = handle.asElement();
  if (!el) throw new Error(`no input for ${JSON.stringify(spec)}`);
  await el.click({ clickCount: 3 });
  await page.keyboard.press('Backspace');
  await el.type(String(spec.value));
  if (spec.enter) await page.keyboard.press('Enter');
}

// Opens the nth visible antd select (in the topmost dialog if one is open); with `option`, clicks
// the open dropdown's option of that text, else types `value` and picks the first match.
async function select(spec) {
  const handle = await page.evaluateHandle((nth) => {
    const shown = (el) => el.offsetParent !== null;
    const d = [...document.querySelectorAll('.ant-modal-content, .ant-drawer-content')].filter(shown);
    const root = d[d.length - 1] || document;
    return [...root.querySelectorAll('.ant-select')].filter(shown)[nth] || null;
  }, spec.nth || 0);
  const el = handle.asElement();
  if (!el) throw new Error(`no select #${spec.nth || 0}`);
  await el.click();
  if (spec.option === undefined) {
    await page.keyboard.type(String(spec.value));
    await sleep(400);
    await page.keyboard.press('Enter');
    return;
  }
  await sleep(300);
  const ok = await page.evaluate((text) => {
    const open = [...document.querySelectorAll('.ant-select-dropdown:not(.ant-select-dropdown-hidden)')];
    const hits = open.flatMap((d) => [...d.querySelectorAll('.ant-select-item-option')])
      .filter((o) => o.innerText.trim() === text);
    if (!hits.length) return false;
    hits[hits.length - 1].click();
    return true;
  }, String(spec.option));
  if (!ok) throw new Error(`no option "${spec.option}" in the open select`);
  if (spec.close) await page.keyboard.press('Escape');
}

async function noDialog() {
  await page.waitForFunction(() => ![...document.querySelectorAll('.ant-modal-content, .ant-drawer-content')]
    .some((el) => el.offsetParent !== null && getComputedStyle(el).visibility !== 'hidden'), { timeout: 10000 });
}

// `ms` 0: no wait at all (typing or picking in a form makes no round trip to wait for)
async function settle(ms = 300) {
  if (ms === 0) return;
  try { await page.waitForNetworkIdle({ idleTime: 300, timeout: 20000 }); } catch { /* long polls */ }
  await sleep(ms);
}

const out = [];
let lastText = '';
for (const step of steps) {
  calls = [];
  const record = { name: step.name, error: null };
  const captured = [];
  try {
    if (step.goto !== undefined) {
      // a new document per step (the query string differs), so no state leaks from the last one
      await page.goto(`${base}/?step=${out.length}#${step.goto}`, { waitUntil: 'networkidle2', timeout: 90000 });
    }
    for (const a of step.actions || []) {
      if (a.click) await clickText(a.click, a.nth || 0, !!a.inDialog);
      else if (a.fill) {
        // valueFrom: the first match of a regex in the text the last step showed (an id, say)
        const m = a.fill.valueFrom ? lastText.match(new RegExp(a.fill.valueFrom)) : null;
        if (a.fill.valueFrom && !m) throw new Error(`no /${a.fill.valueFrom}/ in the last step's text`);
        await fill(m ? { ...a.fill, value: m[0] } : a.fill);
      }
      else if (a.select) await select(a.select);
      else if (a.clickCss) {
        // the nth visible element matching a CSS selector (a clickable tag or icon without a button)
        const ok = await page.evaluate((css, nth) => {
          const hits = [...document.querySelectorAll(css)].filter((el) => el.offsetParent !== null);
          if (hits.length <= nth) return false;
          hits[nth].click();
          return true;
        }, a.clickCss, a.nth || 0);
        if (!ok) throw new Error(`no visible ${a.clickCss} #${a.nth || 0}`);
      }
      else if (a.key) await page.keyboard.press(a.key);
      else if (a.wait) await sleep(a.wait);
      else if (a.escape) { await page.keyboard.press('Escape'); await sleep(300); }
      else if (a.close) {
        // the open dialog's Close button, then wait until no dialog is shown (its animation done)
        await clickText('Close', 0, true);
        await noDialog();
      }
      else if (a.noDialog) await noDialog();  // a form's own button closed it: wait for its animation
      else if (a.capture) { await settle(a.settle ?? 300); captured.push(`## ${a.capture}\n${await visibleText(!!a.values, !!a.notices)}`); continue; }
      else throw new Error(`unknown action ${JSON.stringify(a)}`);
      await settle(a.settle ?? 300);
    }
    await settle(step.settle ?? 500);
    record.text = [...captured, await visibleText(!!step.values)].join('\n');
  } catch (e) {
    record.error = String(e && e.message || e);
    record.text = [...captured, await visibleText().catch(() => '')].join('\n');
  }
  lastText = record.text;
  record.calls = calls;
  if (shotDir) {
    fs.mkdirSync(shotDir, { recursive: true });
    await page.screenshot({ path: path.join(shotDir, `${out.length.toString().padStart(2, '0')}-${step.name}.png`), fullPage: true }).catch(() => {});
  }
  out.push(record);
  if (step.after === 'escape') { await page.keyboard.press('Escape'); await sleep(400); }
}
fs.writeFileSync(outFile, JSON.stringify(out, null, 1));
await browser.close();

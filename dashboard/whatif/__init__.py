"""The What-if page's tabs, one module each (the page is :mod:`dashboard.pages.whatif`)."""

"""Section builders: each turns one kind of labcoat result (plain data) into a page section."""

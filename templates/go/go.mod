module __BINARY__

go 1.19

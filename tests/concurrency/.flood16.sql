SET ROLE stress_platform; SELECT try_pay(1);
